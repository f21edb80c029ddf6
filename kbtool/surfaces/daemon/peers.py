"""Who may be at either end of the search daemon's socket, and where the socket may live.

The queries say what an engineer works on and the answers are trusted (a "confirmed" hit steers an agent), so the
socket is this user's alone. Its usual place is the knowledge base's .kb/daemon.sock; when that path is too long
for a unix socket address (108 bytes) it goes in a folder of this user's only: $XDG_RUNTIME_DIR/kb, else
/tmp/kb-UID, made mode 0700 and refused when it is a link, another user's, or open to group or others (a name in
/tmp that someone else made first). Wherever the socket is, each end asks the kernel who the other is
(SO_PEERCRED, Linux): the client never sends a query to a socket another user listens on, and the daemon never
answers another user's client. A refusal is ForeignSocket; the client then searches in its own process.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from pathlib import Path

UNIX_PATH_MAX = 100  # of a socket's path, with room to spare below the 108 bytes of sockaddr_un


class ForeignSocket(Exception):
    """The socket, or the folder it lives in, is not this user's alone."""


def private_dir() -> Path:
    """This user's own folder for daemon sockets: $XDG_RUNTIME_DIR/kb (when that path is short enough), else
    /tmp/kb-UID; made 0700 if missing; ForeignSocket when it is not a folder of this user's alone."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    folder = Path("/tmp") / f"kb-{os.geteuid()}"
    if runtime and Path(runtime).is_absolute() and Path(runtime).is_dir() and len(runtime) < UNIX_PATH_MAX - 30:
        folder = Path(runtime) / "kb"
    try:
        os.mkdir(folder, 0o700)  # the umask can only take bits away
    except FileExistsError:
        pass
    except OSError as exc:
        raise ForeignSocket(f"{folder}: cannot make it ({exc.strerror})") from None
    try:
        found = os.lstat(folder)
    except OSError as exc:
        raise ForeignSocket(f"{folder}: {exc.strerror}") from None
    if not stat.S_ISDIR(found.st_mode):
        raise ForeignSocket(
            f"{folder} is not a folder (a link or a file); kb keeps its daemon's socket only in a folder of this "
            "user's alone"
        )
    if found.st_uid != os.geteuid():
        raise ForeignSocket(f"{folder} belongs to uid {found.st_uid}, not to this user (uid {os.geteuid()})")
    if found.st_mode & 0o077:
        raise ForeignSocket(
            f"{folder} is open to other users (mode {stat.S_IMODE(found.st_mode):o}); kb keeps its daemon's socket "
            "only in a folder of this user's alone (chmod 700 it)"
        )
    return folder


def peer_uid(sock: socket.socket) -> int | None:
    """The user at the other end of a connected unix socket (for a client: who listened; for the daemon: who
    connected), where the system tells (Linux); None elsewhere."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    size = struct.calcsize("3i")
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, size))
    return int(uid)


def check_peer(sock: socket.socket, who: str) -> None:
    """ForeignSocket unless the other end of sock is this user; who: how to name the other end."""
    uid = peer_uid(sock)
    if uid is not None and uid != os.geteuid():
        raise ForeignSocket(f"{who} is uid {uid}, not this user (uid {os.geteuid()})")

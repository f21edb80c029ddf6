"""Agent Skills: the specification's checks and a knowledge base's skill registry.

The specification's checks are spec, with the security scan (scan) beside them; the registry is what `kb skill
new / import / export / pack` write (registry, pack). Also here: skills installed into an agent's skills folder
and pinned in its lock (install, lock, staging), skills that arrive by an import or a sync (arriving), and the
kb skill that ships with kbtool (bundled)."""

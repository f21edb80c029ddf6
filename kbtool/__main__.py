from .surfaces.cli import main

main()

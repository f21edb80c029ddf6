from kbtool.surfaces.cli import main

main()

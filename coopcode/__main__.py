from coopcode.cli import main

main()

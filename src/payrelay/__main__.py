from payrelay.cli.main import main

main()

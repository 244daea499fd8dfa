from payrelay.cli.main import app

app()

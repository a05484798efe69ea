"""The server of the gym_swe OpenEnv package: ``app.py`` (the ASGI app and ``main``) and its Dockerfile."""

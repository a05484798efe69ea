"""gym_swe as an OpenEnv environment package (the layout ``openenv build`` reads): ``openenv.yaml``, this
package's client and models, and ``server/`` (the app and its Dockerfile). See README.md."""

"""Deployments: the Remote/Cluster interface (remote.py) and the Docker backend."""

-- MLflow's basic-auth app keeps its users and permissions in a database of its own.
CREATE DATABASE mlflow_auth;

"""The shipped preset YAML files (data only; see ``oracle.preset`` for the schema)."""

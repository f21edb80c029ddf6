"""Migrations, installed as kbtool.migrations: `index` for the derived search index."""

"""The web view for the people who curate a knowledge base: `kb ui` and `kb site`.

The web view of a knowledge base for the people who curate it: `kb ui` (app.py, a live server whose
actions are commits) and `kb site` (site.py, the same pages as static files). Both read through
KnowledgeBase (views.py) and render the same templates (render.py)."""

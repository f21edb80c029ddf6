"""The web view of a knowledge base for the people who curate it: `kb ui` (kbtool.web.app, a live
server whose actions are commits) and `kb site` (kbtool.web.site, the same pages as static files).
Both read through KnowledgeBase (kbtool.web.views) and render the same templates (kbtool.web.render)."""

"""The pipeline: one stored message driven through every stage (``process``: claim, authenticate, read, match,
decide), and a platform's open cases processed again once its new template is in force (``reprocess``). Above
every stage it drives (import-linter's layers in pyproject.toml)."""

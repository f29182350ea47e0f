"""Groups of settings that ``config.settings`` imports by name: tables that would bury the environment-driven
values if they stood in that module."""

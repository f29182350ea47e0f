"""Groups of settings that ``config.settings`` imports by name: the environment every part reads
(``environment.py``), tables that would bury the environment-driven values if they stood in that module, and
whole subjects (transfer detection, the payment platform). Each setting is assigned here by its name."""

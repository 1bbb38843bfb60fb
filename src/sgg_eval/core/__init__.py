"""The vocabulary every layer shares: the errors a user sees (``errors``), every default (``defaults``), the tasks
and their names (``tasks``) and the performance knobs (``tuning``). Imports nothing else of sgg_eval."""

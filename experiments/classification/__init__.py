"""The report's classification section: the leaderboard of the classification runs and
their figures (:mod:`.section`)."""

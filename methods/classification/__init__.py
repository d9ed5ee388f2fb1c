"""The classification kind's part of the methods layer: its prediction type
(:mod:`.prediction`) and the reference methods that exist for classification only."""

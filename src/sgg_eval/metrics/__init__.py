"""The metric family: first-match ranks per image (ranks.py) reduced over images (reduce.py)."""

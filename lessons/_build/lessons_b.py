"""Lessons 05–08 (filled in next)."""
LESSONS_B: dict = {}

"""The graded mode: its tasks, gold, pages, judges panel and forms."""

"""The graded judging mode: assessors grade (topic, document) items that the sampling engine
draws, and the dashboard estimates DCG/ERR of the runs from them. Its item flow (the core's
graded tasks: claim, answer, skip, undo, gold questions) also serves the modes whose items are
graded tasks chosen otherwise (training data, the single documents of side by side)."""

"""HeapSort top-k: the resumable state machine, merged orders (Bradley-Terry), kappa metrics."""

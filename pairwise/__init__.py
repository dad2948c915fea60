"""Pairwise preference judging and the HeapSort top-k campaign mode (Niu et al., SIGIR 2012)."""

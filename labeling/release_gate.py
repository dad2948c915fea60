"""The release gate's old address: ``python -m labeling.release_gate`` runs `clients.release_gate`
(the client lives outside the server's apps; it imports nothing of them)."""

from clients.release_gate import EXIT_CODES, EXIT_REFUSED, EXIT_TIMEOUT, describe, main, run

__all__ = ["EXIT_CODES", "EXIT_REFUSED", "EXIT_TIMEOUT", "describe", "main"]

if __name__ == "__main__":
    run()

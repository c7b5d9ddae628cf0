"""Table printers per API group (``pkg/printers/internalversion/printers.go``): each module's
``PRINTERS`` maps a kind to its columns and its row renderer."""

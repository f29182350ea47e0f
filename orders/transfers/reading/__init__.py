"""Reading: the platform templates that parse an authentic message, its matching against the order, the barcodes of
ticket files, and staff's template versions (docs/architecture/transfers.md "Transfer detection")."""

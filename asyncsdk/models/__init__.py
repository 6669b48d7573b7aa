"""attrs models of the interface, one module per area, plus the code lists."""

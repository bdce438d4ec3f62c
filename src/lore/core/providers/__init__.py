"""Model providers. `base` holds the contract; each provider module implements it."""

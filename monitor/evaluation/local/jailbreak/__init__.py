"""The learned jailbreak-attempt detector: features, decoded payloads and the shipped linear model."""

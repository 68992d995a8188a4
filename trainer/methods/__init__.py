"""trainer/methods package."""

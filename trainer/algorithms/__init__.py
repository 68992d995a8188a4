"""What the trainer optimises: rewards, advantages and their estimators, the policy losses and the
rows a step trains on."""

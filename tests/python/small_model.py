"""The small model and the seeded training steps the Python tests share."""

import torch


def make():
    """A 6 -> 12 -> 3 MLP, the same weights at every call."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3))


def train(model, optimizer, first, steps, save=None):
    """Steps first .. first + steps - 1, each on a batch seeded by its step; save(step)
    after each when given."""
    for step in range(first, first + steps):
        g = torch.Generator().manual_seed(step)
        x, y = torch.randn(16, 6, generator=g), torch.randn(16, 3, generator=g)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        if save:
            save(step)

"""ResMLP (Touvron et al. 2021) as in the paper's Appendix B: 384 features, 12 layers, patch size
16 (here on 32x32 CIFAR images, as the paper trained it: 4 patches); affine normalisation,
cross-patch linear sublayer and a per-patch MLP (expansion 4, GELU), layer scale."""
import torch
from torch import nn


class Affine(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return self.alpha * x + self.beta


class Layer(nn.Module):
    def __init__(self, dim, patches, init=0.1):
        super().__init__()
        self.aff1, self.aff2 = Affine(dim), Affine(dim)
        self.token = nn.Linear(patches, patches)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.scale1 = nn.Parameter(init * torch.ones(dim))
        self.scale2 = nn.Parameter(init * torch.ones(dim))

    def forward(self, x):                           # x: [B, patches, dim]
        x = x + self.scale1 * self.token(self.aff1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.scale2 * self.mlp(self.aff2(x))


class ResMLP(nn.Module):
    def __init__(self, dim=384, depth=12, patch=16, image=32, classes=10):
        super().__init__()
        patches = (image // patch) ** 2
        self.embed = nn.Conv2d(3, dim, patch, patch)
        self.layers = nn.Sequential(*[Layer(dim, patches) for _ in range(depth)])
        self.norm = Affine(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = self.norm(self.layers(x))
        return self.head(x.mean(dim=1))


def build():
    return ResMLP()


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)

"""EfficientNet-B0 (Tan & Le 2019): MBConv blocks with squeeze-and-excitation and SiLU, the B0
stage table (expansion, channels, repeats, stride, kernel), 1280-channel head; run here on
32x32 CIFAR-shaped inputs with 10 classes."""
import torch
from torch import nn

STAGES = [(1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3), (6, 112, 3, 1, 5),
          (6, 192, 4, 2, 5), (6, 320, 1, 1, 3)]


def conv_bn(cin, cout, k, s, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.SiLU()) if act else nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, ch, squeeze):
        super().__init__()
        self.reduce = nn.Conv2d(ch, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, ch, 1)

    def forward(self, x):
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(s))))


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, stride, k):
        super().__init__()
        hid = cin * expand
        layers = [] if expand == 1 else [conv_bn(cin, hid, 1, 1)]
        layers += [conv_bn(hid, hid, k, stride, groups=hid), SqueezeExcite(hid, max(1, cin // 4)),
                   conv_bn(hid, cout, 1, 1, act=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class EfficientNetB0(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2)], 32
        for t, c, n, s, k in STAGES:
            for i in range(n):
                layers.append(MBConv(cin, c, t, s if i == 0 else 1, k))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def build():
    return EfficientNetB0()


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)

"""MobileNet-V2 (Sandler et al. 2018) for CIFAR-10: inverted residual blocks (expansion 6,
depthwise 3x3, linear bottleneck), ReLU6, the CIFAR variant's stride 1 in the stem and the second
stage (32x32 inputs), width 1.0, 1280-channel head, 10 classes."""
import torch
from torch import nn

CFG = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def conv_bn(cin, cout, k, s, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.ReLU6()) if act else nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hid = cin * expand
        layers = [] if expand == 1 else [conv_bn(cin, hid, 1, 1)]
        layers += [conv_bn(hid, hid, 3, stride, groups=hid), conv_bn(hid, cout, 1, 1, act=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 1)], 32
        for t, c, n, s in CFG:
            for k in range(n):
                layers.append(InvertedResidual(cin, c, s if k == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = self.features(x)
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def build():
    return MobileNetV2()


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)

"""The stacked critic update of `gridarena bench critic` in PyTorch, timed in rows/s.

Same shapes and the same work per update as gridarena's CPU critic benchmark (src/bench/critic.rs,
src/cli/bench/critic.rs): K networks stacked, `rows` u8 observation rows per update (row r on
network r mod K), each network `layers` x (Linear -> LayerNorm with its own gain and bias ->
ReLU) and a linear head; forward with `torch.bmm`, MSE on the chosen action against a target,
backward (no input gradient), one Adam step over the stacked parameters. Three untimed updates,
then `repeat` timed repeats of `updates` updates; the median is reported.

Prints one line `rows/s (median): N`.
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


class StackedMlp(torch.nn.Module):
    """K independent LayerNorm MLPs as stacked `[K, in, out]` weights, applied with bmm."""

    def __init__(self, nets, input, hidden, layers, head):
        super().__init__()
        self.hidden = hidden
        widths = [input] + [hidden] * layers
        self.weights = torch.nn.ParameterList()
        self.biases = torch.nn.ParameterList()
        self.gammas = torch.nn.ParameterList()
        self.betas = torch.nn.ParameterList()
        for fan_in, fan_out in zip(widths, widths[1:] + [head]):
            w = torch.empty(nets, fan_in, fan_out)
            for k in range(nets):
                torch.nn.init.kaiming_uniform_(w[k].T, a=5**0.5)
            self.weights.append(torch.nn.Parameter(w))
            self.biases.append(torch.nn.Parameter(torch.zeros(nets, 1, fan_out)))
        for _ in range(layers):
            self.gammas.append(torch.nn.Parameter(torch.ones(nets, 1, hidden)))
            self.betas.append(torch.nn.Parameter(torch.zeros(nets, 1, hidden)))

    def forward(self, x):
        """`x`: `[K, rows per net, input]` -> `[K, rows per net, head]`."""
        for w, b, g, beta in zip(self.weights, self.biases, self.gammas, self.betas):
            x = torch.baddbmm(b, x, w)
            x = F.relu(F.layer_norm(x, (self.hidden,)) * g + beta)
        return torch.baddbmm(self.biases[-1], x, self.weights[-1])


def main():
    # Defaults: `gridarena bench critic`'s (src/cli/bench/critic.rs).
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", type=int, default=8)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--input", type=int, default=147)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--head", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (waits for the device)")
    parser.add_argument("--json", action="store_true", help="also print a JSON line")
    args = parser.parse_args()
    if args.rows % args.nets:
        parser.error("--rows must be a multiple of --nets (rows are spread evenly)")

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    per_net = args.rows // args.nets
    dev = torch.device(args.device)
    net = StackedMlp(args.nets, args.input, args.hidden, args.layers, args.head).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    # Row r on network r mod K: grouped by network, that is [K, rows / K, ...].
    obs = torch.randint(0, 3, (args.nets, per_net, args.input), dtype=torch.uint8, device=dev)
    actions = torch.randint(0, args.head, (args.nets, per_net, 1), device=dev)
    targets = torch.rand(args.nets, per_net, device=dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def update():
        q = net(obs.float())
        chosen = q.gather(-1, actions).squeeze(-1)
        loss = F.mse_loss(chosen, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):
        update()
    sync()
    rates = []
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        for _ in range(args.updates):
            update()
        sync()
        rates.append(args.rows * args.updates / (time.perf_counter() - start))
    median = statistics.median(rates)
    print(
        f"PyTorch {torch.__version__} on {dev.type}, {torch.get_num_threads()} threads: "
        f"K={args.nets} nets, "
        f"input {args.input} (u8), {args.layers}x{args.hidden} LayerNorm MLP, head {args.head}, "
        f"{sum(p.numel() for p in net.parameters())} parameters; {args.rows} rows per update "
        "(bmm forward, MSE, backward, Adam)"
    )
    print("rows/s per repeat: [" + ", ".join(f"{r:.0f}" for r in rates) + "]")
    print(f"rows/s (median): {median:.0f}")
    if args.json:
        print(json.dumps({"rows_per_s": rates, "median": median}))


if __name__ == "__main__":
    main()

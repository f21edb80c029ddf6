"""A serving loop of our own, for real A/A and A/B runs on a GPU (tests/data/h100-serving/SOURCE.txt).

One process is one run: it builds a Llama-architecture model from a config (random weights from a fixed
seed: nothing can be downloaded on the GPU machine), sends it `--requests` prompts of random token ids
(a fixed seed: the same prompts every run) one at a time, decodes greedily with the KV cache, times each
token as a streaming client would see it arrive (host clock after a device synchronize), and writes the
result in the form of `vllm bench serve --save-result --save-detailed` (the per-request ttfts, itls,
input_lens, output_lens, start_times, errors; mean/median/std/p99 of TTFT, TPOT, ITL and end-to-end
latency, computed as vLLM's benchmark computes them). `backend` names this loop, not vLLM; the GPU and
versions go to a file beside it (RUN.env.json), as vLLM's result records none.

    python3 bench/gpu_serving_loop.py --attn sdpa --out run.json

Needs torch with CUDA and transformers (the device machine has both); kb never imports this.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import datetime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attn", default="sdpa", help="transformers attn_implementation: eager or sdpa")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--input-len", type=int, default=2048)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import numpy as np
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(args.seed)
    config = LlamaConfig(
        vocab_size=32000,
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 4,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads,
        max_position_embeddings=args.input_len + args.output_len + 16,
        attn_implementation=args.attn,
    )
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    prompts = torch.randint(
        3, config.vocab_size, (args.requests, args.input_len), generator=torch.Generator().manual_seed(1)
    )

    @torch.inference_mode()
    def serve(prompt: torch.Tensor) -> tuple[float, list[float], float]:
        """(TTFT s, inter-token latencies s, end-to-end s) of one request, greedy, KV cache."""
        start = time.perf_counter()
        ids = prompt.to("cuda", non_blocking=True).unsqueeze(0)
        out = model(input_ids=ids, use_cache=True)
        token = out.logits[:, -1:].argmax(-1)
        cache = out.past_key_values
        torch.cuda.synchronize()
        last = time.perf_counter()
        ttft = last - start
        itls = []
        for _ in range(args.output_len - 1):
            out = model(input_ids=token, past_key_values=cache, use_cache=True)
            token = out.logits[:, -1:].argmax(-1)
            cache = out.past_key_values
            token.item()  # the token reaches the host: what a streaming client waits for
            now = time.perf_counter()
            itls.append(now - last)
            last = now
        return ttft, itls, last - start

    serve(prompts[0])  # one warm-up request, as vllm bench serve's initial test prompt; not recorded
    ttfts: list[float] = []
    itls: list[list[float]] = []
    e2els: list[float] = []
    starts: list[float] = []
    begin = time.perf_counter()
    for prompt in prompts:
        starts.append(time.perf_counter())
        ttft, itl, e2el = serve(prompt)
        ttfts.append(ttft)
        itls.append(itl)
        e2els.append(e2el)
    duration = time.perf_counter() - begin

    completed = len(ttfts)
    out_lens = [args.output_len] * completed
    tpots = [(e - t) / (n - 1) for e, t, n in zip(e2els, ttfts, out_lens, strict=True) if n > 1]
    flat_itls = [x for request in itls for x in request]

    def ms_stats(name: str, values: list[float]) -> dict[str, float]:
        arr = np.asarray(values) * 1000
        return {
            f"mean_{name}_ms": float(arr.mean()),
            f"median_{name}_ms": float(np.median(arr)),
            f"std_{name}_ms": float(arr.std()),
            f"p99_{name}_ms": float(np.percentile(arr, 99)),
        }

    result = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": "in-process",
        "backend": "transformers-serving-loop",
        "label": args.label,
        "model_id": f"llama-arch-{args.layers}L-{args.hidden}h-random-bf16",
        "tokenizer_id": None,
        "num_prompts": args.requests,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 1,
        "duration": duration,
        "completed": completed,
        "failed": 0,
        "total_input_tokens": args.input_len * completed,
        "total_output_tokens": sum(out_lens),
        "request_throughput": completed / duration,
        "request_goodput": None,
        "output_throughput": sum(out_lens) / duration,
        "total_token_throughput": (args.input_len * completed + sum(out_lens)) / duration,
        "input_lens": [args.input_len] * completed,
        "output_lens": out_lens,
        "ttfts": ttfts,
        "itls": itls,
        "start_times": starts,
        "generated_texts": [""] * completed,
        "errors": [""] * completed,
        **ms_stats("ttft", ttfts),
        **ms_stats("tpot", tpots),
        **ms_stats("itl", flat_itls),
        **ms_stats("e2el", e2els),
    }
    with open(args.out, "w") as f:
        json.dump(result, f)
    environment = {  # beside the result, as vllm bench serve records none of it
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.version.cuda,
        "attn_implementation": args.attn,
        "layers": args.layers,
    }
    with open(args.out.removesuffix(".json") + ".env.json", "w") as f:
        json.dump(environment, f)
    print(
        f"{args.out}: ttft {statistics.mean(ttfts) * 1000:.2f} ms, itl {statistics.mean(flat_itls) * 1000:.3f} ms, "
        f"out {result['output_throughput']:.1f} tok/s"
    )


if __name__ == "__main__":
    main()

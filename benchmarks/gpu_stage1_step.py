"""Stage 1's training step on a GPU: tokens/s and memory, Qwen2.5-Coder-7B architecture, random weights.

Run (a CUDA machine; without CUDA it prints SKIP and exits 0):

    .venv/bin/python benchmarks/gpu_stage1_step.py                  # 3 timed steps at 32k tokens
    .venv-trainer/bin/python benchmarks/gpu_stage1_step.py          # + 4-bit (bitsandbytes) and Liger
    .venv/bin/python benchmarks/gpu_stage1_step.py --cpu-smoke      # the same code path, tiny, on CPU

What it trains: a model built from Qwen2.5-Coder-7B-Instruct's architecture (hidden 3584, 28 layers,
GQA 28/4, vocab 152064, YaRN x4 as in assets/stages/stage1.yaml) with RANDOM weights (no download),
with TRL's SFTTrainer and PEFT, using stage 1's settings: LoRA r=64, alpha=128, dropout 0.05, DoRA,
all seven projections, micro batch 1 x 32768 tokens, bf16, gradient checkpointing, adamw fused,
cosine LR 1e-4; 4-bit NF4 base (QLoRA) when bitsandbytes is importable, Liger kernels when
liger_kernel is, flash-attention-2 when flash_attn is (else SDPA). Random weights make the loss
meaningless but the cost real: FLOPs and memory do not depend on the weights' values.

Baseline, measured in the same run: plain LoRA (no DoRA) with everything else equal, so the
ratio says what DoRA costs per step on this GPU. It also projects hours per billion tokens.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from dataclasses import dataclass

QWEN25_CODER_7B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768,
                       rms_norm_eps=1e-6, tie_word_embeddings=False)
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=512, max_position_embeddings=32768, tie_word_embeddings=False)
ROPE = {"rope_type": "yarn", "rope_theta": 1_000_000.0, "factor": 4.0, "original_max_position_embeddings": 32768}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@dataclass
class Result:
    name: str
    tokens_per_s: float
    step_s: float
    peak_gib: float
    trainable: int
    loss: float


def build_model(dims: dict, device: str, four_bit: bool, attn: str, workdir: str):
    import torch
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Qwen2Config

    config = Qwen2Config(**dims, rope_parameters=dict(ROPE), use_sliding_window=False)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    if not four_bit:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn)
        return model
    # bitsandbytes quantizes at load time only: materialize the random model once on disk.
    with torch.device("cpu"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.save_pretrained(workdir)
    del model
    gc.collect()
    bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                             bnb_4bit_compute_dtype=dtype)
    return AutoModelForCausalLM.from_pretrained(workdir, quantization_config=bnb, dtype=dtype,
                                                attn_implementation=attn, device_map={"": 0})


def id_tokenizer(vocab_size: int):
    """A tokenizer whose vocabulary is just the ids (the data is pre-tokenized random ids)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(vocab_size)}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="t2")),
                                   pad_token="t0", eos_token="t1", unk_token="t2")


def run_case(name: str, *, dora: bool, dims: dict, seq_len: int, steps: int, device: str, four_bit: bool,
             attn: str, liger: bool, workdir: str) -> Result:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    model = build_model(dims, device, four_bit, attn, workdir)
    rng = torch.Generator().manual_seed(1)
    rows = [{"input_ids": torch.randint(0, dims["vocab_size"], (seq_len,), generator=rng).tolist()}
            for _ in range(steps + 1)]
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if device == "cuda":
                torch.cuda.synchronize()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - self.t0)

    args = SFTConfig(
        output_dir=f"{workdir}/out", max_steps=steps + 1, per_device_train_batch_size=1,
        gradient_accumulation_steps=1, learning_rate=1e-4, lr_scheduler_type="cosine", warmup_steps=0,
        bf16=device == "cuda", gradient_checkpointing=device == "cuda", max_length=seq_len, packing=False,
        optim="adamw_torch_fused" if device == "cuda" else "adamw_torch", logging_steps=1, save_strategy="no",
        report_to=[], use_liger_kernel=liger, dataset_num_proc=1, use_cpu=device == "cpu",
    )
    peft_config = LoraConfig(r=64, lora_alpha=128, lora_dropout=0.05, use_dora=dora, target_modules=TARGETS,
                             task_type="CAUSAL_LM")
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), peft_config=peft_config,
                         processing_class=id_tokenizer(dims["vocab_size"]), callbacks=[Timer()])
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    out = trainer.train()
    timed = times[1:] or times  # the first step pays for kernel compilation and allocator warm-up
    step_s = sum(timed) / len(timed)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else float("nan")
    result = Result(name, seq_len / step_s, step_s, peak, trainable, float(out.training_loss))
    del trainer, model
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per case (after 1 warm-up step)")
    parser.add_argument("--seq-len", type=int, default=32768)
    parser.add_argument("--no-4bit", action="store_true", help="bf16 base even if bitsandbytes is installed")
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny model on CPU: checks the code path only")
    a = parser.parse_args(argv)

    import torch

    if a.cpu_smoke:
        device, dims, seq_len, four_bit, attn, liger = "cpu", TINY, 128, False, "sdpa", False
    else:
        if not torch.cuda.is_available():
            print("SKIP: no CUDA device (torch.cuda.is_available() is False). This benchmark measures stage 1 "
                  "on a GPU (H100/H200); use --cpu-smoke to check its code path on CPU.")
            return 0
        device, dims, seq_len = "cuda", QWEN25_CODER_7B, a.seq_len
        four_bit = available("bitsandbytes") and not a.no_4bit
        attn = "flash_attention_2" if available("flash_attn") else "sdpa"
        liger = available("liger_kernel")
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB")
    print(f"settings: seq_len={seq_len}, 4-bit base={four_bit}, attention={attn}, liger={liger}, "
          f"steps={a.steps} (+1 warm-up)")
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, dora in (("stage1 (LoRA r64 + DoRA)", True), ("baseline (LoRA r64, no DoRA)", False)):
            results.append(run_case(name, dora=dora, dims=dims, seq_len=seq_len, steps=a.steps, device=device,
                                    four_bit=four_bit, attn=attn, liger=liger, workdir=workdir))
    print(f"\n{'case':32} {'tokens/s':>10} {'s/step':>8} {'peak GiB':>9} {'trainable':>12} {'h per 1B tok':>13}")
    for r in results:
        print(f"{r.name:32} {r.tokens_per_s:10.0f} {r.step_s:8.2f} {r.peak_gib:9.1f} {r.trainable:12,d} "
              f"{1e9 / r.tokens_per_s / 3600:13.1f}")
    stage, base = results
    print(f"\nratio stage1/baseline: tokens/s x{stage.tokens_per_s / base.tokens_per_s:.2f}, "
          f"peak memory x{stage.peak_gib / base.peak_gib:.2f}" if device == "cuda" else
          f"\nratio stage1/baseline: tokens/s x{stage.tokens_per_s / base.tokens_per_s:.2f} (CPU smoke, not a figure)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Generation from a checkpoint, below the phases that need it (synth, evals), Dagster-free:
the inference clients (client.py), the managed OpenAI-compatible server (server.py) and a small
transformers-backed stand-in for ``vllm serve`` (standin_server.py). The Dagster resource that
starts the server per step is in resource.py (imported by name, not from here)."""

from .client import (
    GenRequest,
    GenResult,
    InferenceClient,
    InferenceSettings,
    InferenceStats,
    ModelRef,
    TransformersInference,
    VLLMOfflineInference,
    VLLMServerInference,
    cut_at_stop,
    make_inference,
    render_prompt,
)

__all__ = ["GenRequest", "GenResult", "InferenceClient", "InferenceSettings", "InferenceStats", "ModelRef",
           "TransformersInference", "VLLMOfflineInference", "VLLMServerInference", "cut_at_stop",
           "make_inference", "render_prompt"]

"""``judgerl probe``: a judge's false-positive rate on master keys and reward-hacking responses.

Real prompts (IFEval, GSM8K, LLMBar, or your own file) x responses that must not pass: the master
keys of "One Token to Fool LLM-as-a-Judge" (Zhao et al., 2025) and the adversarial pattern of the
judge-as-reward paper ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM Post-Training", 2025). See docs/defences.md.

Example::

    from judgerl.probe import load_probe_prompts, run_probe
    prompts = load_probe_prompts("../shared/data", n_per_source=10)
    summary = run_probe(judge, prompts, "runs/probe")
    summary["false_positive_rate"]
"""

from judgerl.probe.items import (
    FALSE_POSITIVE_FAMILIES,
    FAMILIES,
    HACK_TEMPLATES,
    SOURCES,
    ProbePrompt,
    ProbeResponse,
    default_probes,
    hack_probes,
    load_probe_prompts,
    load_prompts_file,
    master_key_probes,
)
from judgerl.probe.run import ProbeUnit, plan_probe, run_probe
from judgerl.probe.summary import summarise_probe

__all__ = [
    "FALSE_POSITIVE_FAMILIES", "FAMILIES", "HACK_TEMPLATES", "SOURCES", "ProbePrompt", "ProbeResponse", "ProbeUnit",
    "default_probes", "hack_probes", "load_probe_prompts", "load_prompts_file", "master_key_probes", "plan_probe",
    "run_probe", "summarise_probe",
]

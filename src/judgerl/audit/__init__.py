"""Reward-hacking audit: flag the judge-as-reward paper's adversarial pattern in policy outputs.

Policies trained against reasoning judges ("Examining Reasoning LLMs-as-Judges in Non-Verifiable LLM
Post-Training", 2025) learn to refuse citing a fabricated platform policy, emit a
fake end marker such as ``--end response--`` and append a self-evaluation; one-token "master keys"
(``:``, ``Thought process:``, ``Solution``, empty) fool judges (Zhao et al., 2025, "One Token to Fool LLM-as-a-Judge").
This package flags each part per response with rule-based detectors (no model, no network) and
reports rates per kind, overall and per policy-training step. See docs/audit.md.
"""

from judgerl.audit.audit import (
    AUDIT_FIELDS,
    DEFAULT_CONFIG,
    KINDS,
    AuditConfig,
    AuditRecord,
    AuditReport,
    AuditResult,
    audit_records,
    audit_response,
    audit_texts,
    flag_rates,
    flag_response,
    load_audit_records,
    summarize,
    write_audit,
)
from judgerl.audit.detectors import DEFAULT_MASTER_KEYS, Evidence
from judgerl.audit.harm import HarmVerdict, classify_prompt, is_harmful

__all__ = [
    "AUDIT_FIELDS", "DEFAULT_CONFIG", "DEFAULT_MASTER_KEYS", "KINDS", "AuditConfig", "AuditRecord", "AuditReport",
    "AuditResult", "Evidence", "HarmVerdict", "audit_records", "audit_response", "audit_texts", "classify_prompt",
    "flag_rates", "flag_response", "is_harmful", "load_audit_records", "summarize", "write_audit",
]

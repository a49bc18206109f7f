"""Interaction contracts between agents, one feature in one package (docs/contracts.md).

The pure core, sans I/O: the document and its schema (``schema``, ``documents``), the terms
hash and proofs (``proofs``, ``verify``), the record and its lifecycle (``record``,
``lifecycle``), the A2A wire (``wire``), the enforcement decision (``enforcement``) and the
refusals (``errors``). Keys and card signatures are accord.signing's.

Its adapters: the service that runs contracts on an engine (``service``), the gate that judges
each message before it is stored (``gate``), the peers it talks to with accord's client
(``peers``), the operators' HTTP API at ``/contracts`` (``api``), its settings (``settings``),
the wiring into an application (``setup``) and its tables on each store (``tables*``).
"""

from accord.contracts._schema import json_kind, terms_template
from accord.contracts._settings import ContractSettings, Identity
from accord.contracts._verify import verify_document
from accord.contracts._wire import CONTRACTS_URI, NOTICE_MEDIA_TYPE, TRUST_URI, under_contract

__all__ = [
    "CONTRACTS_URI",
    "NOTICE_MEDIA_TYPE",
    "TRUST_URI",
    "ContractSettings",
    "Identity",
    "json_kind",
    "terms_template",
    "under_contract",
    "verify_document",
]

"""Which models a call goes to, inside the caller's model access rule: the selector's chain
(:mod:`nyla.ai.selector`) led by the operation's default model, with the ranked part kept
between calls.

An agent run asks for a model every round with the same query but for the window. What the
answer depends on besides the window (the query's operation, restriction, tools,
capabilities, named model and chain length; the access rule; the operation's default model;
the providers' specs) is the key of a kept :class:`~nyla.ai.selector.Ranked`, and every call
still checks what can change from one call to the next: the window, that its models are still
available, and (in :meth:`nyla.ai.route.Route.models`) their price against the budget left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nyla.config import config_value, settings_fingerprint
from nyla.errors import ModelAccessDenied, ModelNotAvailableError
from nyla.models.ai import ModelSpec, OperationType
from nyla.models.model_query import ModelQuery

if TYPE_CHECKING:
    from nyla.ai.access_rule import AccessRule
    from nyla.ai.selector import ModelSelector, Ranked

log = logging.getLogger(__name__)

#: the setting naming each operation's default model (``NYLA_MODEL_AGENT``, ...)
_DEFAULT_SETTING = {op: f"NYLA_MODEL_{op.name}" for op in OperationType}

#: kinds of call whose ranking is kept at most (all dropped when full)
KEPT = 64


class ModelChains:
    """The chain of models of each call, over ``selector`` and the specs ``models()`` lists
    (the AI service's, a replayed tape's while replaying), ``specs()`` the same as a tuple;
    ``settings`` is the service's (``default_models``)."""

    def __init__(
        self,
        selector: ModelSelector,
        models: Callable[[], list[ModelSpec]],
        settings: Mapping[str, Any],
        specs: Callable[[], tuple[ModelSpec, ...]] | None = None,
    ) -> None:
        self.selector = selector
        self._models = models
        #: ``models()`` as a tuple; the service's is the same object while its specs are,
        #: which the kept rankings compare at once
        self._specs = specs or (lambda: tuple(models()))
        self.settings = settings
        #: the ranked part of each kind of call's chain (see :meth:`_ranked`)
        self._kept: dict[tuple[Any, ...], Ranked] = {}
        #: the same by what a call passes (see :meth:`chain_for`): (default model, ranking)
        self._by_call: dict[tuple[Any, ...], tuple[str | None, Ranked]] = {}
        #: ``NYLA_MODEL_<OPERATION>`` of each operation, as read under ``_configured_under``
        self._configured: dict[OperationType, str | None] = {}
        self._configured_under: tuple[int, int] | None = None

    def chain_for(
        self,
        operation: OperationType,
        context: Any,
        rule: AccessRule | None,
        window: int,
        needs_tools: bool = False,
        model: str | None = None,
        needs: tuple[str, ...] = (),
        limit: int | None = None,
    ) -> list[ModelSpec]:
        """:meth:`chain` for ``ModelQuery.for_call(operation, context, estimated_tokens=window,
        ...)``, the query made only when no kept ranking holds: a round of a run found its
        ranking here by what it passes (the context's restriction copied, as the query copies
        it), which cost ~4k instructions where making the query cost ~22k. The specs, the
        default model, the window and the models' availability are checked as :meth:`chain`
        checks them; anything else (a miss, nothing fits) goes through :meth:`chain`."""
        providers = getattr(context, "allowed_providers", None)
        models = getattr(context, "allowed_models", None)
        key = (
            operation,
            None if providers is None else tuple(providers),
            None if models is None else tuple(models),
            needs_tools,
            needs,
            model,
            limit,
            rule,
        )
        specs = self._specs()
        soft = None if model is not None else self._soft_default(operation)
        kept = self._by_call.get(key)
        if kept is not None and kept[0] == soft and kept[1].specs == specs:
            chain = kept[1].fits_or_none(window)
            if chain is not None:
                for spec in chain:  # (a loop: all() over a generator is a frame more)
                    if not spec.available:
                        break
                else:
                    return chain
        query = ModelQuery.for_call(
            operation,
            context,
            estimated_tokens=window,
            needs_tools=needs_tools,
            model=model,
            needs=needs,
            limit=limit,
        )
        chain = self.chain(query, rule)
        ranked = self._kept.get(self._key(query, rule, soft))
        if ranked is not None and ranked.specs == specs:
            if len(self._by_call) >= KEPT:
                self._by_call.clear()
            self._by_call[key] = (soft, ranked)
        return chain

    def chain(self, query: ModelQuery, rule: AccessRule | None = None) -> list[ModelSpec]:
        """The selector's chain for ``query`` inside the caller's access ``rule``; a model
        (or every model) the rule forbids is a :class:`ModelAccessDenied` naming the rule.
        The ranked part is :meth:`_ranked`'s (kept between calls); the window and the
        models' availability are checked on every call."""
        try:
            chain = self._ranked(query, rule).fits(query.estimated_tokens)
            for spec in chain:
                if not spec.available:  # a kept spec made unavailable in place: rank afresh
                    self._kept.clear()
                    self._by_call.clear()
                    self.selector.forget()
                    return self._ranked(query, rule).fits(query.estimated_tokens)
            return chain
        except ModelNotAvailableError as exc:
            if rule is None or rule.narrow(query, self._models()) is query:
                raise
            raise self._denied(query, rule, exc) from exc

    def _ranked(self, query: ModelQuery, rule: AccessRule | None) -> Ranked:
        """What may answer ``query`` inside ``rule`` whatever its window, kept between the
        calls (the rounds of a run) while nothing it depends on changed: the query but for
        its window, the rule, the operation's default model and the specs (the same objects:
        a change of a setting, a provider's list or the replayed tape gives new ones). Each
        call still checks the window (:meth:`Ranked.fits`), that the models it goes to are
        still available (:meth:`chain`) and their price against the budget
        (:meth:`~nyla.ai.route.Route.models`). Before, every
        call listed, narrowed, looked the default up and checked the named model again
        (~60 us of an agent round's CPU in the bench's runner)."""
        specs = self._specs()
        soft = None if query.model is not None else self._soft_default(query.operation)
        key = self._key(query, rule, soft)
        hit = self._kept.get(key)
        if hit is not None and hit.specs == specs:  # identity first: one pass in C
            return hit
        narrowed = query if rule is None else rule.narrow(query, list(specs))
        ranked = self._default_ranked(narrowed, soft)
        if len(self._kept) >= KEPT:
            self._kept.clear()
        self._kept[key] = ranked
        return ranked

    @staticmethod
    def _key(query: ModelQuery, rule: AccessRule | None, soft: str | None) -> tuple[Any, ...]:
        return (*query.ranking_key(), query.model, query.limit, rule, soft)

    def _soft_default(self, operation: OperationType) -> str | None:
        """The operation's default model: the settings' ``default_models``, else
        ``NYLA_MODEL_<OPERATION>`` (read again only when a setting changed)."""
        defaults = self.settings.get("default_models")
        named = defaults.get(operation.value) if defaults else None
        if named:
            return str(named)
        fingerprint = settings_fingerprint()
        if fingerprint != self._configured_under:
            self._configured = {}
            self._configured_under = fingerprint
        if operation not in self._configured:
            self._configured[operation] = config_value(_DEFAULT_SETTING[operation])
        return self._configured[operation]

    def _denied(
        self, query: ModelQuery, rule: AccessRule, exc: ModelNotAvailableError
    ) -> ModelNotAvailableError:
        """The refusal of a query that fails inside ``rule``: a :class:`ModelAccessDenied`
        when it would have found a model without the rule, else ``exc`` itself."""
        specs = self._models()
        spec = self.selector.spec(query.model) if query.model else None
        if spec is not None:
            why = rule.why_not(spec, query.operation, specs)
            if why is not None:
                return ModelAccessDenied(
                    f"model {spec.id!r} is forbidden by the model access rule of "
                    f"{rule.source}: {why}",
                    rule=rule.source,
                )
        try:
            self.chain(query)
        except ModelNotAvailableError:
            return exc
        return ModelAccessDenied(
            f"no model for operation {query.operation.value!r} is allowed by the model access "
            f"rule of {rule.source} ({exc})",
            rule=rule.source,
        )

    def _default_ranked(self, query: ModelQuery, soft_default: str | None) -> Ranked:
        """The selector's ranking for ``query``, led by the operation's default model
        (``soft_default``) when the query names none and the default may answer it."""
        if soft_default:
            try:
                return self.selector.ranked(replace(query, model=soft_default))
            except ModelNotAvailableError as exc:
                log.warning("default model for %s ignored: %s", query.operation.value, exc)
        return self.selector.ranked(query)

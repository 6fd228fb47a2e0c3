"""The latent variables a record-free model adds, one by one or batched over a hierarchy's groups.

A noise-aware likelihood adds free variables to the model it rebuilds: a latent number of
records, noise-mixing variables, a model of a regression's covariates. Each is created here
(:func:`new_free_variable`) in the FunctionGraph form PyMC rebuilds a model from.

A likelihood by group (``a[county_idx]``, :mod:`pymc_dp.families.grouped`) asks for the same
latent variables once per group. :class:`LatentsByGroup` creates each of them **once**, with
the groups as a leading dim (``y_n_records_log_ratio[county]``, ``y_x_mu[county, covariate]``),
and hands group g its row. The trace then holds a handful of variables labelled by the
model's own coords rather than G copies of each; and PyMC, which builds one gradient per free
variable to choose its step methods, builds a handful instead of 4·G.
"""

from __future__ import annotations

from typing import Any, Sequence

from .._compat import model_var

__all__ = ["new_free_variable", "LatentsByGroup", "NEW_COORDS_TAG"]

#: The tag a new variable's own coords ride on, ``{dim: labels}``, for the rebuilt model to register.
NEW_COORDS_TAG = "pymc_dp_new_coords"


def new_free_variable(name: str, dist: Any, new_outputs: Any, transform: Any = None,
                      dims: Sequence[str] = (), labels: Any = None) -> Any:
    """``dist`` as a free variable ``name`` of a model graph (FunctionGraph form), queued in ``new_outputs``.

    ``labels``: the coords of a new dim ``dims[0]``, tagged on the variable for the rebuilt model.
    ``new_outputs`` may be a :class:`LatentsByGroup`: the variable is then created once for all
    groups and the current group's row returned.
    """
    if isinstance(new_outputs, LatentsByGroup):
        return new_outputs.free(name, dist, transform, tuple(dims), labels)
    coords = {dims[0]: tuple(labels)} if labels is not None else {}
    return _free(name, dist, new_outputs, transform, tuple(dims), coords)


def new_deterministic(value: Any, name: str, new_outputs: Any) -> None:
    """``value`` as a Deterministic ``name`` of a model graph (one per group's row under :class:`LatentsByGroup`)."""
    if isinstance(new_outputs, LatentsByGroup):
        new_outputs.deterministic(name, value)
    else:
        new_outputs.append(model_var("deterministic", value, name))


def _free(name: str, dist: Any, new_outputs: list[Any], transform: Any, dims: tuple[str, ...],
          coords: dict[str, tuple[str, ...]]) -> Any:
    dist.name = name
    value = dist.type(name=f"{name}_log__" if transform is not None else name)
    var = model_var("free", dist, name, value=value, transform=transform, dims=dims)
    if coords:
        setattr(var.tag, NEW_COORDS_TAG, dict(coords))
    new_outputs.append(var)
    return var


def _shape_of(dist: Any) -> tuple[Any, ...]:
    return type(dist.owner.op), tuple(dist.type.shape), dist.type.dtype


class LatentsByGroup:
    """The latent variables of G groups' likelihoods, each created once with the groups as its first dim.

    Build group 0's likelihood, then group 1's, … setting :attr:`group` before each; every
    request for a variable of a name already made returns that variable's row ``[group]``.
    Every group must ask for the same variables, of the same shape (the groups share their
    family and bounds): a request that differs is refused, as a bug, before anything is spent.
    A name in ``shared`` is created once, without the group dim, and every group gets it whole.
    :meth:`finish` adds the Deterministics (one per name, stacked over the groups).
    """

    def __init__(self, new_outputs: list[Any], groups: int, dim: str, labels: Sequence[str] | None,
                 shared: Sequence[str] = ()) -> None:
        self.new_outputs = new_outputs
        self.groups = int(groups)
        self.dim = dim
        #: the group dim's labels when the dim is new to the model (None when it is the model's own)
        self.labels = None if labels is None else tuple(labels)
        #: names of variables every group shares whole: created once, without the group dim
        self.shared = frozenset(shared)
        self.group = 0
        self._free: dict[str, tuple[Any, tuple[Any, ...]]] = {}
        self._deterministic: dict[str, list[Any]] = {}

    def free(self, name: str, dist: Any, transform: Any, dims: tuple[str, ...], labels: Any) -> Any:
        if name in self.shared:
            if name not in self._free:
                coords = {dims[0]: tuple(labels)} if labels is not None else {}
                self._free[name] = (_free(name, dist, self.new_outputs, transform, dims, coords), _shape_of(dist))
            return self._free[name][0]
        if name not in self._free:
            if self.group != 0:
                raise RuntimeError(f"group {self.group} asked for a latent variable {name!r} the first group did not.")
            from pymc.distributions.shape_utils import change_dist_size

            batched = change_dist_size(dist, (self.groups,), expand=True)
            coords = {} if self.labels is None else {self.dim: self.labels}
            if labels is not None:
                coords[dims[0]] = tuple(labels)
            var = _free(name, batched, self.new_outputs, transform, (self.dim, *dims), coords)
            self._free[name] = (var, _shape_of(dist))
        var, shape = self._free[name]
        if _shape_of(dist) != shape:
            raise RuntimeError(f"group {self.group} asked for {name!r} of another shape than the first group's.")
        return var[self.group]

    def deterministic(self, name: str, value: Any) -> None:
        self._deterministic.setdefault(name, []).append(value)

    def finish(self) -> None:
        """Queue the Deterministics requested by every group, each stacked over the groups."""
        import pytensor.tensor as pt

        for name, values in self._deterministic.items():
            if len(values) != self.groups:
                raise RuntimeError(f"{name!r} was given by {len(values)} of {self.groups} groups.")
            out = model_var("deterministic", pt.stack(values), name, dims=(self.dim,))
            if self.labels is not None:
                setattr(out.tag, NEW_COORDS_TAG, {self.dim: self.labels})
            self.new_outputs.append(out)

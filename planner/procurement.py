"""What a buyer can order: servers (the purchase unit: GPUs on a board with the host around
them) and cloud instances (the rental unit: fixed shapes of 1, 2, 4 or 8 GPUs), read from
``presets/servers`` and ``presets/instances`` with their sources, plus user folders as for the
other presets (``--presets DIR``, ``PLANNER_PRESETS``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from estimator.catalog import _validation_message, read_catalogue
from estimator.errors import EstimatorError
from estimator.hardware import Accelerator
from estimator.lookup import Catalog

from .errors import ScenarioError

PRESET = ConfigDict(extra="forbid")


class ServerPreset(BaseModel):
    """A server (or rack) as sold: ``gpus`` GPUs of one type, ``scale_up`` of them sharing an
    NVLink/xGMI domain, the host around them (``host_usd``: everything but the GPUs)."""

    model_config = PRESET
    name: str
    display_name: str = ""
    aliases: list[str] = []
    gpu: str
    gpus: int = Field(ge=1, le=1024)
    scale_up: int = Field(ge=1, le=1024)
    power_w: float = Field(gt=0)  # the whole server at its maximum draw
    rack_units: int = Field(ge=1, le=64)
    host_usd: float | None = Field(None, ge=0)
    nic_gbps: float | None = Field(None, ge=0)
    kind: Literal["hgx", "dgx", "nvl-rack", "oam", "pcie", "workstation"] = "pcie"
    default: bool = False  # the server a plan buys for this GPU unless fleet.servers says
    sources: dict[str, str] = {}
    notes: str = ""

    @property
    def label(self) -> str:
        return self.display_name or self.name


class InstancePreset(BaseModel):
    """A cloud instance shape with its published price for the whole instance."""

    model_config = PRESET
    cloud: str
    name: str
    gpu: str
    gpus: int = Field(ge=1, le=1024)
    usd_per_hour: float = Field(gt=0)  # on-demand
    usd_per_hour_1y: float | None = Field(None, gt=0)  # committed 1 year, where published
    usd_per_hour_3y: float | None = Field(None, gt=0)
    region: str = ""
    date: str = ""
    source: str
    notes: str = ""

    @property
    def key(self) -> str:
        return f"{self.cloud}:{self.name}"

    def price(self, commitment: str) -> float | None:
        """$/hour for the whole instance on a commitment term (None: not published)."""
        return {
            "on-demand": self.usd_per_hour,
            "1y": self.usd_per_hour_1y,
            "3y": self.usd_per_hour_3y,
        }[commitment]


def _read(kind: str, schema, extra_dirs: tuple[str, ...]) -> list:
    out = []
    for path, parsed in read_catalogue(kind, extra_dirs):
        data = parsed or []
        for i, entry in enumerate(data if isinstance(data, list) else [data]):
            try:
                out.append(schema.model_validate(entry))
            except ValidationError as e:
                raise EstimatorError(_validation_message(path, e, f"[{i}].")) from None
    return out


@lru_cache(maxsize=8)
def server_catalog(extra_dirs: tuple[str, ...] = ()) -> Catalog[ServerPreset]:
    items = {s.name: s for s in _read("servers", ServerPreset, extra_dirs)}
    aliases = {a: s.name for s in items.values() for a in s.aliases}
    return Catalog("server", items, aliases)


@lru_cache(maxsize=8)
def instances(extra_dirs: tuple[str, ...] = ()) -> tuple[InstancePreset, ...]:
    """Every instance preset; a user entry with the same cloud and name replaces a shipped one."""
    return tuple({i.key: i for i in _read("instances", InstancePreset, extra_dirs)}.values())


# A generic server for any data-centre GPU, so every type can be bought whole even where no
# preset names its server: the OEM 8-GPU box it ships in (HGX/OAM board or 8 PCIe cards).
# Host: SemiAnalysis "AI Server Cost Analysis" (May 2023, via Epoch AI's
# training-cost-trends) puts the non-GPU bill of an HGX H100 server (CPUs, memory, storage,
# NICs, chassis, board, cooling, PSUs, assembly) at $32,010. Power: the whole server draws
# ~1.8x its GPUs' TDP at maximum (DGX H100 10.2 kW / 5.6 kW of GPUs = 1.82, DGX B200 14.3 / 8.0
# = 1.79, DGX A100 6.5 / 3.2 = 2.03, Supermicro SYS-521GE 8x L40S 5.0 / 2.8 = 1.79; see
# presets/servers). Height: 8U for an 8-GPU board (DGX/HGX H100), 5U for 8 PCIe cards
# (SYS-521GE).
GENERIC_HOST_USD = 32_010
GENERIC_POWER_PER_GPU_TDP = 1.8
GENERIC_GPUS = 8


def generic_server(gpu: Accelerator) -> ServerPreset | None:
    """The generic 8-GPU server of a data-centre GPU; None for rack-scale parts (their rack
    is the unit) and for consumer and workstation cards (no data-centre server)."""
    domain = gpu.scale_up.domain_size
    if domain > GENERIC_GPUS or gpu.segment != "datacenter":
        return None
    board = domain == GENERIC_GPUS
    return ServerPreset(
        name=f"generic-{gpu.name}-x{GENERIC_GPUS}",
        display_name=f"{GENERIC_GPUS}-GPU {gpu.name} {'board' if board else 'PCIe'} server",
        gpu=gpu.name,
        gpus=GENERIC_GPUS,
        scale_up=domain,
        power_w=GENERIC_POWER_PER_GPU_TDP * gpu.tdp_w * GENERIC_GPUS,
        rack_units=8 if board else 5,
        host_usd=GENERIC_HOST_USD,
        kind="hgx" if board else "pcie",
        sources={"all": "planner.procurement.generic_server (derivation documented there)"},
        notes="generic: any OEM's 8-GPU server of this GPU, priced from a published BOM",
    )


def servers_for(gpu: Accelerator, extra_dirs: tuple[str, ...] = ()) -> list[ServerPreset]:
    """The servers a GPU type ships in (its presets, then the generic one), the default first."""
    found = [s for s in server_catalog(extra_dirs).items.values() if s.gpu == gpu.name]
    generic = generic_server(gpu)
    return sorted(found, key=lambda s: (not s.default, s.name)) + ([generic] if generic else [])


def instances_for(
    gpu: str, clouds: list[str] | None, commitment: str, extra_dirs: tuple[str, ...] = ()
) -> list[InstancePreset]:
    """The instance shapes that rent a GPU type, on the allowed clouds, priced on the term."""
    return sorted(
        (
            i
            for i in instances(extra_dirs)
            if i.gpu == gpu
            and (not clouds or i.cloud in clouds)
            and i.price(commitment) is not None
        ),
        key=lambda i: (i.cloud, i.gpus, i.name),
    )


def clouds(extra_dirs: tuple[str, ...] = ()) -> list[str]:
    return sorted({i.cloud for i in instances(extra_dirs)})


def check_clouds(names: list[str], extra_dirs: tuple[str, ...] = ()) -> None:
    """Unknown cloud names (a scenario's cost.clouds) are an input error that names the
    known ones."""
    known = clouds(extra_dirs)
    for c in names:
        if c not in known:
            import difflib  # only for the error's hint

            near = difflib.get_close_matches(c, known, n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            listed = ", ".join(known)
            raise ScenarioError(f"cost.clouds: unknown cloud '{c}'{hint} (known: {listed})")

"""Accelerator schema: what the estimator needs to know about a GPU, each value sourced.

Bandwidths are per GPU and per direction, in decimal GB/s; FLOPS are dense (not 2:4 sparse).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Vendor = Literal["nvidia", "amd", "intel"]
# consumer: GeForce-class cards (licence excludes data-centre use); workstation: pro desktop
# cards (RTX A6000, RTX 6000 Ada); datacenter: everything sold for servers.
Segment = Literal["datacenter", "workstation", "consumer"]

GIB = 2.0**30
ECC_SHARE = 1.0 / 16.0  # in-band ECC on GDDR6 (NVIDIA: "ECC ... reduces usable memory by 6.25%")
# What the driver keeps back from the binary capacity: A100 80GB 79.15 GiB, A100 40GB
# 39.56 GiB (vLLM start-up logs in validation/engine_logs.csv) -> 1.06%, 1.10%.
DRIVER_RESERVED = 0.011
FAST_ACCUM_PRECISIONS = ("fp16", "fp8")  # BF16 and INT8 tensor math has one rate only


class ScaleUp(BaseModel):
    """The fast GPU-to-GPU fabric inside one box or rack (NVLink/NVSwitch, Infinity Fabric)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    kind: str
    bandwidth_gb_s: float = Field(ge=0, description="per GPU, per direction")
    latency_us: float = Field(gt=0, description="small-message link latency (alpha)")
    domain_size: int = Field(ge=1, description="GPUs sharing this fabric in the standard system")
    host_gpus: int | None = Field(
        default=None,
        ge=2,
        description=(
            "NVLink-bridged PCIe cards: GPUs one server joins over PCIe beyond the bridge "
            "(a group wider than domain_size, up to this, crosses PCIe, not the NIC)"
        ),
    )
    allreduce_bus_gb_s: dict[int, float] | None = Field(
        default=None,
        description=(
            "measured all-reduce bus bandwidth of this server, by GPUs in the group "
            "(nccl-tests all_reduce_perf 'busbw' at 2, 4, 8): in place of the measured "
            "servers' median share (calibration links.allreduce_bus_share)"
        ),
    )

    @field_validator("allreduce_bus_gb_s")
    @classmethod
    def _groups(cls, v: dict[int, float] | None) -> dict[int, float] | None:
        if v is not None and (not set(v) <= {2, 4, 8} or min(v.values(), default=1) <= 0):
            raise ValueError("give positive GB/s for groups of 2, 4 and/or 8 GPUs")
        return v


class Accelerator(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    display_name: str
    aliases: list[str] = []
    vendor: Vendor
    segment: Segment = "datacenter"  # a user preset may omit it; shipped ones all state it
    family: str
    memory_gb: float = Field(gt=0, description="the marketed capacity")
    runtime_memory_gib: float | None = Field(
        None, gt=0, description="total memory as torch / nvidia-smi report it (sourced)"
    )
    memory_type: str | None = None
    memory_bandwidth_gb_s: float = Field(gt=0)
    dense_tflops: dict[str, float | None]  # null = not published / not native: dropped
    # GeForce cards run 16-bit and FP8 tensor math with FP32 accumulation at half the rate of
    # FP16 accumulation; ``dense_tflops`` holds the FP32-accumulate rate (what PyTorch's and
    # the serving engines' kernels use), this the FP16-accumulate one, which kernels that
    # accumulate in 16 bits reach (FP8 matmuls with ``use_fast_accum``, TensorRT FP16)
    fast_accum_tflops: dict[str, float] = {}
    scale_up: ScaleUp
    pcie_gen: int | None = None
    pcie_gb_s: float = Field(gt=0, description="PCIe x16 per direction")
    scale_out_gb_s: float | None = Field(
        None, gt=0, description="per-GPU NIC bandwidth per direction; None: no standard NIC"
    )
    tdp_w: float = Field(gt=0)
    price_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    rental_usd_per_hour: float | None = Field(None, gt=0, allow_inf_nan=False)
    sources: dict[str, str]
    notes: str = ""

    @field_validator("dense_tflops")
    @classmethod
    def _lower(cls, v: dict[str, float | None]) -> dict[str, float]:
        return {k.lower(): float(x) for k, x in v.items() if x}

    @field_validator("fast_accum_tflops")
    @classmethod
    def _lower_fast(cls, v: dict[str, float]) -> dict[str, float]:
        return {k.lower(): float(x) for k, x in v.items()}

    @model_validator(mode="after")
    def _fast_accum_is_faster(self) -> Accelerator:
        for k, x in self.fast_accum_tflops.items():
            if k not in FAST_ACCUM_PRECISIONS:
                raise ValueError(
                    f"fast_accum_tflops: '{k}' has no 16-bit-accumulate mode (only "
                    f"{', '.join(FAST_ACCUM_PRECISIONS)})"
                )
            if k not in self.dense_tflops or x < self.dense_tflops[k]:
                raise ValueError(
                    f"fast_accum_tflops.{k} needs a dense_tflops.{k} at or below it (the "
                    "FP32-accumulate rate)"
                )
        return self

    @property
    def memory_bytes(self) -> float:
        """Device capacity as the runtime reports it, in bytes: the logged figure where the
        preset has one, else the marketed size read as GiB (memory parts are binary-sized),
        less what ECC takes on GDDR6 data-centre parts (on by default: 1/16) and the ~1.1%
        the driver reserves (A100 80GB reports 79.15 GiB, 40GB 39.56 GiB in vLLM logs)."""
        if self.runtime_memory_gib:
            return self.runtime_memory_gib * GIB
        ecc = ECC_SHARE if self._ecc_by_default else 0.0
        return self.memory_gb * GIB * (1.0 - ecc) * (1.0 - DRIVER_RESERVED)

    @property
    def _ecc_by_default(self) -> bool:
        """Data-centre GDDR6 boards (T4, A10, L4, L40S...) ship with ECC on, which stores
        check bits in 1/16 of the memory; HBM carries ECC in extra dies, GeForce and
        workstation boards ship with it off."""
        return self.segment == "datacenter" and (self.memory_type or "").upper() == "GDDR6"

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.memory_bandwidth_gb_s * 1e9

    def peak_flops(self, precision: str, fast_accum: bool = False) -> float:
        """Dense tensor FLOP/s at ``precision``; ``fast_accum``: where the kernels accumulate
        in 16 bits (the card's FP16-accumulate rate where it has a faster one)."""
        if fast_accum and precision in self.fast_accum_tflops:
            return self.fast_accum_tflops[precision] * 1e12
        return self.dense_tflops[precision] * 1e12

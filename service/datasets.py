"""/v1/datasets: push a version of an eval dataset, list datasets and versions, read a version's items page by page."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, HttpMethod, Response, delete, get, post, route
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter

from ragpulse.config import defaults
from ragpulse.intake.decode import decode_body
from ragpulse.model.dataset import (
    DATASET_NAME_PATTERN, DatasetDeleted, DatasetList, DatasetVersion, DatasetVersionList, DatasetVersionPage, DatasetVersionPost,
)
from service.context import Call

Name = Annotated[str, Parameter(pattern=DATASET_NAME_PATTERN, description=(
    "The dataset's name: 1 to 64 letters, digits, dots, underscores and hyphens, not starting with a dot."))]
Version = Annotated[int, Parameter(ge=1, description="The version number, from 1 in push order.")]
Offset = Annotated[int, Parameter(ge=0, le=defaults.MAX_ITEMS_PER_VERSION, description=(
    "Position of the first item to answer (0 for the first page); next_offset of the previous page."))]
Limit = Annotated[int, Parameter(ge=1, le=defaults.DATASET_ITEMS_PAGE_MAX, description=(
    f"Items per page (1 to {defaults.DATASET_ITEMS_PAGE_MAX})."))]


class DatasetController(Controller):
    """Versioned eval datasets; a tenant sees its own only (others get 404)."""

    path = "/v1/datasets"
    tags = ["datasets"]

    @post("/{name:str}/versions", sync_to_thread=True, summary="Push a new version of a dataset", status_code=201,
          responses={200: ResponseSpec(DatasetVersion, description=(
              "The items are the latest version's again (same content hash): that version, nothing written."))})
    def push(self, name: Name, body: bytes, call: Call) -> Response[DatasetVersion]:
        """Store the items as the dataset's next version (the dataset is created by its first push): 201 with the
        version, its content hash and its counts by question type, source and split. Versions are immutable.

        The items of the latest version pushed again (same content hash, whatever their order) answer 200 with that
        version and write nothing. 400 on malformed JSON, 422 naming every failing path (a repeated item_id, a
        misspelt field), 413 over RAGPULSE_MAX_BODY_BYTES, 409 over the tenant's dataset limits
        (RAGPULSE_DATASETS_PER_TENANT, RAGPULSE_DATASET_VERSIONS_MAX, RAGPULSE_DATASET_ITEMS_PER_TENANT)."""
        pushed = call.services.datasets.push(call.tenant, name, decode_body(body, DatasetVersionPost))
        return Response(pushed.version, status_code=201 if pushed.created else 200)

    @get("/", sync_to_thread=True, summary="The tenant's datasets")
    def datasets(self, call: Call) -> DatasetList:
        """Every dataset of the calling tenant, by name, with its number of versions and its latest version."""
        return DatasetList(items=call.services.datasets.list_datasets(call.tenant))

    @get("/{name:str}/versions", sync_to_thread=True, summary="The versions of a dataset")
    def versions(self, name: Name, call: Call) -> DatasetVersionList:
        """Every version of the dataset, newest first, each with its content hash and counts; 404 when the tenant
        has no dataset of this name."""
        return DatasetVersionList(name=name, items=call.services.datasets.list_versions(call.tenant, name))

    @get("/{name:str}/versions/{version:int}", sync_to_thread=True, summary="One version and a page of its items")
    def version(self, name: Name, version: Version, call: Call, offset: Offset = 0,
                limit: Limit = defaults.DATASET_ITEMS_PAGE_DEFAULT) -> DatasetVersionPage:
        """The version and its items from `offset`, in push order; follow `next_offset` until it is null. 404 when the
        tenant has no such dataset or version."""
        datasets = call.services.datasets
        found = datasets.get_version(call.tenant, name, version)
        items = datasets.read_items(call.tenant, name, version, offset, limit)
        more = offset + len(items) < found.counts.items
        return DatasetVersionPage(version=found, items=items, offset=offset,
                                  next_offset=offset + len(items) if more and items else None)

    @delete("/{name:str}/versions/{version:int}", sync_to_thread=True, status_code=200,
            summary="Delete one version of a dataset")
    def delete_version(self, name: Name, version: Version, call: Call) -> DatasetDeleted:
        """Remove the version and its items, freeing its room under the tenant's limits; its number is never given
        to another version while the dataset exists. Jobs that ran it keep their results and its name, number and
        content hash. 404 when the tenant has no such version."""
        removed = call.services.datasets.delete_version(call.tenant, name, version)
        return DatasetDeleted(name=name, versions=[removed.version], items=removed.counts.items)

    @delete("/{name:str}", sync_to_thread=True, status_code=200, summary="Delete a dataset and all its versions")
    def delete_dataset(self, name: Name, call: Call) -> DatasetDeleted:
        """Remove every version of the dataset and the name itself (a later push starts again at version 1); jobs
        that ran it keep their results and its versions' content hashes. 404 when the tenant has no such dataset."""
        removed = call.services.datasets.delete_dataset(call.tenant, name)
        return DatasetDeleted(name=name, versions=[v.version for v in removed],
                              items=sum(v.counts.items for v in removed))

    @route("/{name:str}/versions", http_method=HttpMethod.OPTIONS, include_in_schema=False, sync_to_thread=False)
    def options(self, name: str) -> Response[None]:
        """Litestar's automatic OPTIONS answer lists only the first handler's methods; this one lists both."""
        return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS, POST"})

    @route("/{name:str}/versions/{version:int}", http_method=HttpMethod.OPTIONS, include_in_schema=False,
           sync_to_thread=False)
    def allowed_version_methods(self, name: str, version: int) -> Response[None]:
        """As `options`, for a version: read or delete. Named to sort before `delete_version`: a controller registers
        its handlers in name order, and only a first OPTIONS handler prevents Litestar's automatic one."""
        return Response(None, status_code=204, headers={"Allow": "DELETE, GET, OPTIONS"})

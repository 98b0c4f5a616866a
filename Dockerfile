# syntax=docker/dockerfile:1
#
# One image with the tradeterm binaries (docs/deploy.md, "Container image"):
#
#   docker build -t tradeterm .
#   docker run --env-file gateway.env -p 8081:8081 tradeterm tradeterm-gateway
#   docker run --env-file api.env     -p 4000:4000 tradeterm tradeterm-api
#   docker run --env-file mcp.env     -p 8090:8090 tradeterm tradeterm-mcp
#
# Each container runs one binary; every setting comes from the environment
# (the table in docs/deploy.md). Secrets and key files are mounted, never
# baked in.

ARG RUST_VERSION=1.94
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS build
# aws-lc-sys (TLS and JWT signatures) builds its C code with CMake.
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
        -p tradeterm -p tradeterm-api -p tradeterm-gateway-bin -p tradeterm-mcp-server \
        -p tradeterm-sim-bin -p tradeterm-connect \
 && mkdir -p /out \
 && cp target/release/tradeterm target/release/tradeterm-api target/release/tradeterm-gateway \
       target/release/tradeterm-mcp target/release/tradeterm-sim target/release/tradeterm-connect /out/

FROM debian:${DEBIAN_RELEASE}-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/tradeterm --create-home tradeterm
COPY --from=build /out/ /usr/local/bin/
USER tradeterm
WORKDIR /var/lib/tradeterm
# Listen on every interface of the container; production unless overridden.
ENV HOST=0.0.0.0 \
    NODE_ENV=production
# REST API, gateway, MCP.
EXPOSE 4000 8081 8090
CMD ["tradeterm-gateway"]

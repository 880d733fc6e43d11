"""What a crawl leaves behind: the job dir (its state, lock, integrity and
repair), the pipelines that write records, the progress line and the report."""

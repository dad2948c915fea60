from django.apps import AppConfig


class UploadsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "uploads"
    verbose_name = "Uploads"

    def ready(self) -> None:
        from labeling.import_reports import UploadKind, register_upload
        from uploads.imports import documents_import, qrels_import, topics_import
        from uploads.run_imports import runs_import

        # The coordinator's upload boxes of the campaign page.
        register_upload(
            UploadKind(
                "topics",
                "Topics",
                "TREC topic file (<top> blocks) or JSONL with id, title, description, narrative.",
                topics_import,
                formats=(("trec", "TREC"), ("jsonl", "JSONL")),
            ),
        )
        register_upload(
            UploadKind(
                "documents",
                "Documents",
                "JSONL with docno, title, text, url, length. Optional: documents only named by runs "
                "are judged by docno or URL.",
                documents_import,
                formats=(("jsonl", "JSONL"),),
            ),
        )
        register_upload(
            UploadKind(
                "runs",
                "Runs",
                "TREC runs (qid Q0 docno rank score tag), plain or gzip; several files at once, one "
                "system each.",
                runs_import,
                multiple=True,
            ),
        )
        register_upload(
            UploadKind(
                "qrels",
                "Existing qrels",
                "TREC qrels (qid 0 docno grade): counted as already judged.",
                qrels_import,
                multiple=True,
            ),
        )

"""Every span/log attribute name the assembler reads, in one place.

Three instrumentation ecosystems describe the same LLM call differently; this module names their
keys, grouped by convention. Nothing here has logic.
"""

from __future__ import annotations

# --- OpenTelemetry GenAI (current: 1.37+) -------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"  # ≤1.36 name of the provider
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"  # OpenLLMetry ≤0.54
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
GEN_AI_RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"

CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
EMBEDDING_OPERATIONS = frozenset({"embeddings", "embedding", "create_embeddings"})
RETRIEVAL_OPERATION = "retrieval"

# Log record event names
EVENT_OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_SYSTEM_MESSAGE = "gen_ai.system.message"
EVENT_USER_MESSAGE = "gen_ai.user.message"
EVENT_ASSISTANT_MESSAGE = "gen_ai.assistant.message"
EVENT_TOOL_MESSAGE = "gen_ai.tool.message"
EVENT_CHOICE = "gen_ai.choice"
EVENT_NAME_ATTRIBUTE = "event.name"  # before LogRecord.event_name existed
MESSAGE_EVENT_ROLES = {
    EVENT_SYSTEM_MESSAGE: "system",
    EVENT_USER_MESSAGE: "user",
    EVENT_ASSISTANT_MESSAGE: "assistant",
    EVENT_TOOL_MESSAGE: "tool",
}

# --- OpenInference ------------------------------------------------------------------------
OI_SPAN_KIND = "openinference.span.kind"
OI_KIND_LLM = "LLM"
OI_KIND_EMBEDDING = "EMBEDDING"
OI_KIND_RETRIEVER = "RETRIEVER"
OI_KIND_RERANKER = "RERANKER"
OI_INPUT_MESSAGES = "llm.input_messages"  # llm.input_messages.N.message.role/content
OI_OUTPUT_MESSAGES = "llm.output_messages"
OI_MESSAGE_ROLE = "message.role"
OI_MESSAGE_CONTENT = "message.content"
OI_MESSAGE_CONTENTS = "message.contents"  # .M.message_content.type/text
OI_CONTENT_TEXT = "message_content.text"
OI_MODEL_NAME = "llm.model_name"  # the model that answered
OI_INVOCATION_PARAMETERS = "llm.invocation_parameters"  # JSON of the request, incl. "model"
OI_PROVIDER = "llm.provider"
OI_SYSTEM = "llm.system"
OI_TOKEN_PROMPT = "llm.token_count.prompt"
OI_TOKEN_COMPLETION = "llm.token_count.completion"
OI_INPUT_VALUE = "input.value"
OI_OUTPUT_VALUE = "output.value"
OI_RETRIEVAL_DOCUMENTS = "retrieval.documents"  # retrieval.documents.N.document.id/content/score
OI_RERANKER_OUTPUT_DOCUMENTS = "reranker.output_documents"
OI_DOCUMENT_ID = "document.id"
OI_DOCUMENT_CONTENT = "document.content"
OI_DOCUMENT_SCORE = "document.score"
OI_DOCUMENT_METADATA = "document.metadata"
OI_SESSION_ID = "session.id"
OI_USER_ID = "user.id"

# --- OpenLLMetry (Traceloop) --------------------------------------------------------------
TL_PROMPT_PREFIX = "gen_ai.prompt"  # gen_ai.prompt.N.role/content (≤0.54)
TL_COMPLETION_PREFIX = "gen_ai.completion"
TL_REQUEST_TYPE = "llm.request.type"
TL_CHAT_TYPES = frozenset({"chat", "completion"})
TL_EMBEDDING_TYPE = "embedding"
TL_SESSION_ID = "traceloop.association.properties.session_id"
TL_ASSOCIATION_PREFIX = "traceloop.association.properties."
TL_SPAN_KIND = "traceloop.span.kind"
TL_ENTITY_NAME = "traceloop.entity.name"
TL_ENTITY_INPUT = "traceloop.entity.input"
TL_ENTITY_OUTPUT = "traceloop.entity.output"
TL_USAGE_TOTAL = "llm.usage.total_tokens"

# --- Generic ------------------------------------------------------------------------------
SERVICE_NAME = "service.name"
HTTP_ROUTE = "http.route"
EXCEPTION_EVENT = "exception"
EXCEPTION_MESSAGE = "exception.message"
EXCEPTION_TYPE = "exception.type"

# Keys that may carry the conversation id, most specific first.
CONVERSATION_ID_KEYS = (GEN_AI_CONVERSATION_ID, OI_SESSION_ID, TL_SESSION_ID, "session_id", "conversation_id")

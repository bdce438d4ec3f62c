"""What a wiki claim must not be: text that talks to the AI instead of about the world.

A note states facts for a person. Text addressed to an assistant, model, bot or "system", a
request to call a tool, to put a token or a summary into a reply, to redefine the reader's
role or rules, or a link built to carry data out, has no place in one. Each rule names a
kind of intent and needs wording that only makes sense aimed at a model, so manuals full of
imperatives to a human reader ("Run `make`", "Call support before 5 pm") pass.

The rules read canonical text (`lore.core.gates.canonical`): lower case, look-alike letters
folded, hidden characters gone. Languages: English, French, Spanish, Portuguese, Italian,
German, Chinese and Japanese.
"""

from __future__ import annotations

import functools
import re

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.gates.harmful import find_harmful_request

_AI_NOUN = (
    r"(?:ai|a\.i\.|bot|chatbot|assistant|model|llm|agent|language\s+model|gpt|chatgpt|copilot"
    r"|claude|gemini|summari[sz]er|crawler|scraper)"
)
_AI_NOUN_OTHER = (
    r"(?:l['’]ia|l['’]assistant|le\s+mod[eè]le|le\s+bot|l['’]agent|la\s+ia|el\s+asistente"
    r"|el\s+modelo|el\s+bot|el\s+agente|a\s+ia|o\s+assistente|o\s+modelo|o\s+bot|o\s+agente"
    r"|l['’]assistente|il\s+modello|die\s+ki|der\s+assistent|das\s+modell|der\s+bot|der\s+agent"
    r"|人工智能|ai助手|助手|模型|机器人|智能体|アシスタント|モデル|ボット|エージェント)"
)
# Things a model holds that a document has no business asking for.
_SENSITIVE = (
    r"(?:summary|summaries|conversation|chat(?:\s+history)?|transcript|context|system\s+prompt"
    r"|prompt|api[\s_-]?keys?|passwords?|passcodes?|credentials|secrets?|access\s+tokens?|tokens"
    r"|private\s+keys?|ssh\s+keys?|database|db\s+dump|customer\s+\w+|user\s+data|users?['’]?\s+\w+"
    r"|personal\s+(?:data|information|details)|contacts|address\s+book|inbox|emails|e-mails"
    r"|messages|notes|documents|files|records|(?:bank|card|account)\s+(?:details|numbers?)"
    r"|iban|social\s+security|history|memory|everything|all\s+(?:of\s+)?(?:the\s+)?data"
    r"|(?:security|verification|confirmation|authentication|login|one-time|2fa|mfa|otp|reset)"
    r"\s+codes?|passport\s+(?:numbers?|details)"
    r"|(?:body|bodies|content|contents|text)\s+of\s+(?:the|this|that|these|those|my|your|all|every)"
    r"\s+(?:[\w-]+\s+){0,3}?(?:e-?mails?|messages?|files?|documents?|notes?|conversations?|chats?))"
)
# What no document should ask to be revealed or sent: secrets, and what a model was told.
_SECRETS = (
    r"(?:summary|conversation|chat\s+history|transcript|system\s+prompt|prompt|api[\s_-]?keys?"
    r"|passwords?|passcodes?|credentials|secrets?|access\s+tokens?|private\s+keys?|ssh\s+keys?"
    r"|database|customer\s+\w+|user\s+data|personal\s+(?:data|information|details)|contacts"
    r"|address\s+book|inbox|(?:bank|card|account)\s+(?:details|numbers?)|iban|social\s+security)"
)
_REPLY = r"(?:reply|response|answer|output|summary|completion|message|result|next\s+turn)"
_REPLY_VERB = r"(?:responding|answering|replying|you\s+(?:respond|answer|reply|summari[sz]e))"
_SNAKE_TOOL = (
    r"(?:send|post|delete|remove|rm|run|exec|execute|transfer|share|upload|forward|http|fetch"
    r"|browse|invite|pay|book|reserve|update|create|write|download|move|copy|append|set|get"
    r"|read|list|search|add|drop|grant|email|mail|open|call|invoke|submit|schedule)_[a-z0-9_]+"
)
_URL_OR_ADDRESS = r"(?:https?://\S+|\S+@\S+\.\w+|www\.\S+)"

# Models named by name, where a text speaks to one.
_AUTHOR_VERB = (
    r"(?:suggest|recommend|create|generate|write|compose|draft|design|outline|detail|provide|give"
    r"|list|explain|describe|tell|share|devise|develop|craft|prepare|produce|propose|formulate"
    r"|advise|say)"
)
_MODEL_NAME = r"(?:mixtral|mistral|llama|qwen|grok|deepseek|gemma|bard|command[\s-]r)"

# Where a request to the reader starts: a sentence, a line, a label, or a word leading in.
_REQUEST_START = (
    r"(?:^|[.!?:;,*]\s*|\n|\b(?:please|kindly|now|then|and|also|just|todo|first)\s*[:,]?\s+)"
)
_PIPELINE_STEP = (
    r"(?:given|read|take|rephrase|classify|route|answer|translate|summari[sz]e|normali[sz]e"
    r"|rewrite|modify|alter)\s+the\s+(?:provided\s+|following\s+|original\s+|current\s+)?"
    r"user['’]?s?\s+(?:question|query|message|prompt|input|request)\b"
)
# What an assistant's tools act on, and the particulars that make an errand of it.
_ERRAND = (
    r"(?:a\s+link|the\s+link|a\s+website|the\s+file|the\s+text|a\s+reservation|a\s+booking"
    r"|an?\s+(?:\d+\s+)?(?:[\w-]+\s+){0,3}?(?:event|meeting|invitation)|the\s+password|user\s+\w+)"
)
_ERRAND_DETAIL = (
    r"(?:\S+@\S+\.\w+|https?://\S+|www\.\S+|\bwith\s+(?:the\s+)?id\s+\d+|\b\d{4}-\d{2}-\d{2}"
    r"|\b(?:from|on)\s+(?:the\s+)?\d{1,2}(?:st|nd|rd|th)\b|\bto\s+[a-z]+\s*$|\bto\s+\w+_\w+)"
)

# Any stretch of one sentence, between the words a rule links: a dot followed by more than a
# space (an address, a file name, a version) does not end it.
_IN_SENTENCE = r"(?:[^.!?\n]|\.(?=\S))"

_RULES: list[tuple[str, str]] = [
    # Addressed to a model.
    (
        "addressed to an AI",
        rf"\b(?:to|for)\s+you\s*,\s*(?:the\s+|an?\s+|my\s+|dear\s+)?(?:[\w-]+\s+){{0,2}}?"
        rf"(?:{_AI_NOUN}|{_MODEL_NAME})s?\b",
    ),
    (
        "addressed to an AI",
        rf"\b(?:note|message|instructions?|reminder|request|memo|directive|notice|warning)s?\s+"
        rf"(?:to|for)\s+(?:the\s+|any\s+|all\s+|an?\s+)?(?:\w+\s+)?{_AI_NOUN}s?\b",
    ),
    (
        "addressed to an AI",
        r"(?:^|[\n.!?]\s*|\[|<|#+\s*)(?:system|admin(?:istrator)?|developer|assistant|operator"
        r"|ai|bot|model)\s+(?:note|message|instruction|override|prompt|notice|alert|update"
        r"|command|directive)s?\s*[:：\]>]",
    ),
    (
        "addressed to an AI",
        r"\[(?:system|assistant|inst|admin)\]|<\|?(?:system|assistant)\|?>|^\s*(?:system|assistant)\s*[:：]",
    ),
    (
        "addressed to an AI",
        rf"\b(?:dear|hey|hi|hello|attention|attn|psst)\b[\s,!:]+(?:the\s+)?{_AI_NOUN}s?\b",
    ),
    (
        "addressed to an AI",
        rf"\b(?:if|when|while|since)\s+you\s+(?:are|'re|’re)\s+(?:an?\s+)?(?:\w+\s+)?{_AI_NOUN}\b",
    ),
    (
        "addressed to an AI",
        rf"\b{_AI_NOUN}s?\s+(?:that\s+is\s+|who\s+is\s+)?(?:reading|processing|summari[sz]ing|parsing"
        r"|analy[sz]ing|viewing|indexing|ingesting|reviewing)\s+(?:this|these|the\s+(?:page|document"
        r"|text|file|e-?mail|message|content))",
    ),
    (
        "addressed to an AI",
        r"(?:^|[.!?:]\s+|\n)\s*(?:please\s+)?(?:tell|inform|show|remind|convince|persuade|instruct"
        r"|advise|urge|ask)\s+the\s+user\b",
    ),
    (
        "addressed to an AI",
        r"[#(\[<{|]\s*(?:system|assistant|admin|developer|operator)[_\s-]?(?:message|prompt|note"
        r"|instruction|override)s?\s*[)\]>}|:]|\[\s*(?:system|admin|developer|root)\s+(?:\w+\s+){0,2}?"
        r"(?:mode|override|access|prompt)\b",
    ),
    (
        "addressed to an AI",
        r"\byour\s+(?:own\s+|full\s+|entire\s+|exact\s+)?(?:system\s+(?:prompt|message|instructions)"
        r"|(?:initial|hidden|original|secret|internal|pre-?prompt)\s+(?:prompt|instructions|rules)"
        r"|prompt\s+instructions|training\s+data|guardrails|safety\s+(?:filters?|guidelines|policies"
        r"|training)|content\s+polic(?:y|ies)|developer\s+(?:message|instructions)|context\s+window"
        r"|unique\s+id|programming|creators?|underlying\s+model)\b"
        r"|\bprompts?\s+(?:that\s+)?you\s+(?:were|have\s+been|['’]ve\s+been)\s+given\b",
    ),
    (
        "addressed to an AI",
        r"\b(?:\w*gpt|chatbot|language\s+model|llm|ai\s+assistant|ai\s+model)s?\s+(?:will|must|should"
        rf"|can|is\s+(?:now|allowed|free|able)|has\s+(?:been|no))\b{_IN_SENTENCE}{{0,60}}?\b(?:any|every|all"
        r"|anything|no\s+(?:rules|restrictions|limits|filters|policies))\b",
    ),
    (
        "hijacks the task",
        r"\b(?:the|your|my)\s+(?:original\s+|previous\s+|current\s+|initial\s+|first\s+|real\s+)?task"
        r"\s+(?:that\s+|which\s+)?(?:i|the\s+user|they|we|he|she)\s+(?:gave|assigned|asked|set)\s+(?:to\s+)?you"
        r"|\b(?:before|instead\s+of)\s+(?:you\s+)?(?:can\s+)?(?:solv|complet|continu|answer|perform"
        r"|do|finish|start)\w*\s+(?:the|your)\s+(?:original\s+|current\s+|user['’]?s\s+)?task"
        r"|\byour\s+(?:new\s+|next\s+|real\s+|only\s+)?task\s+(?:is|will\s+be)\s+(?:now\s+)?to\b"
        r"|\bif\s+you\s+(?:are|were|have\s+been|get)\s+(?:told|asked|instructed|prompted|requested)"
        r"\s+to\s+(?:summari[sz]e|answer|translate|respond|reply|analy[sz]e|process|review|classify)",
    ),
    (
        "acts without the user",
        r"\bwithout\s+(?:first\s+)?(?:asking|confirming|checking\s+with|telling|notifying|informing"
        r"|alerting|consulting)\s+(?:me|the\s+user|anyone|them|him|her|for\s+(?:confirmation|permission"
        r"|approval))\b|\b(?:do\s+not|don['’]t|never)\s+(?:ask|wait)\s+(?:me\s+|the\s+user\s+)?for\s+"
        r"(?:confirmation|permission|approval)",
    ),
    (
        "asks to move money",
        r"\b(?:send|transfer|wire|pay|move)\s+(?:\S+\s+){0,6}?(?:money|funds|\$\s?\d|€\s?\d|£\s?\d"
        rf"|\d[\d,.]*\s?(?:usd|eur|gbp|dollars|euros)|a\s+transaction|a\s+payment)\b{_IN_SENTENCE}{{0,80}}?"
        r"\b(?:to|into)\s+(?:the\s+)?(?:account|iban|wallet|[a-z]{2}\d{2}[a-z0-9]{10,})",
    ),
    (
        "addressed to an AI",
        r"\byou\s+are\s+(?:now\s+)?(?:\w+,\s+)?an?\s+(?:[\w-]+\s+){0,3}?(?:ai|a\.i\.|assistant|chatbot"
        r"|bot|language\s+model|llm|\w*gpt)\b(?!\s+(?:researcher|engineer|enthusiast|developer|expert"
        r"|specialist|scientist|student|company|startup|product|team|consultant|manager|user))",
    ),
    (
        "addressed to an AI",
        r"\byou\s+are\s+(?:now\s+)?(?:operating|running|working|acting|functioning)\s+(?:in|as\s+part\s+of"
        r"|as|under)\s+(?:an?\s+|the\s+)?(?:\w+\s+)?(?:developer|debug|debugging|test|testing|training"
        r"|maintenance|admin|administrator|god|unrestricted|sandbox|evaluation)\s+(?:mode|pipeline"
        r"|environment|exercise|session)",
    ),
    (
        "asks the reader for an answer",
        r"(?:^|[.!?:;,*]\s*|\n|\b(?:please|and|then|now|also|just|first|so|kindly)\s+)(?:tell|give"
        r"|show|advise|recommend|suggest\s+to|teach|provide|write|create|generate|list|explain\s+to"
        r"|help)\s+me\b(?!\s+(?:a\s+(?:call|ring|shout|hand|break)|know|out|with\s+this))",
    ),
    (
        # A request to write something for the writer: "suggest stocks that I should buy",
        # "create a plan that will double my money". A manual's imperatives serve its reader.
        "asks the reader for an answer",
        rf"(?:^|[.!?:;,*]\s*|\n|\b(?:please|kindly|now|then|and|also|just)\s+){_AUTHOR_VERB}\b"
        rf"(?:{_IN_SENTENCE}{{0,80}}?\b(?:for\s+me|i\s+(?:should|could|can|might|would|must))\b"
        rf"|{_IN_SENTENCE}{{0,60}}?\b(?:that|which|to)\s+{_IN_SENTENCE}{{0,40}}?\bmy\b)",
    ),
    (
        "redefines the rules",
        r"\bregardless\s+of\s+(?:(?:any|all|your|my)\s+(?:\w+\s+)?|(?:the\s+)?(?:previous|prior"
        r"|pre-?existing|earlier|original)\s+)(?:input|instructions|guidelines|rules|restrictions"
        rf"|policies|programming|limitations)|\bno\s+matter\s+what\b{_IN_SENTENCE}{{0,40}}?\b(?:instructions"
        r"|rules|polic(?:y|ies)|guidelines|restrictions)\b|(?:^|\n)\W*(?:new|updated|important|urgent)\s+"
        r"(?:important\s+|new\s+)?(?:instructions|directives)\W*(?:$|\n)",
    ),
    (
        # The text before a document is the prompt that read it: it starts "You are".
        "asks for the hidden prompt",
        rf"(?:above|before|earlier|preceding|previous|prior|first)\b{_IN_SENTENCE}{{0,80}}?\bstart\w*\s+with"
        r"\s+[\"'“‘]?you\s+are\b|\b(?:repeat|print|output|show|reveal|recite|list|go\s+(?:line\s+by"
        rf"\s+line|through))\b{_IN_SENTENCE}{{0,40}}?\b(?:above|before)\s+this\s+(?:message|line|point|text"
        r"|prompt|sentence)\b",
    ),
    (
        # A policy file that names the replies a model may not give ("blocked_strings").
        "redefines the rules",
        r"\bblocked[_\s-]?(?:strings|responses|modes|phrases|words|outputs)\b",
    ),
    (
        "hijacks the task",
        r"\byou(?:['’]ve|\s+have)\s+been\s+(?:given|assigned|tasked\s+with)\s+(?:a|the|this|one|an)"
        r"\s+(?:new\s+|special\s+|secret\s+)?(?:task|mission|job|assignment)",
    ),
    # Casting the reader as a character: the opening of a persona prompt.
    (
        "casts the reader in a role",
        r"\bi\s+(?:want|need|would\s+like)\s+you\s+to\s+(?:act|pretend|behave|respond|answer|reply"
        r"|simulate|roleplay|role-play|play\s+the\s+role|become|take\s+on)\b"
        r"|\bsimulat\w*\s+(?:\w+\s+){0,4}?(?:chatbot|ai|a\.i\.|\w*gpt|language\s+model|llm|assistant)s?\b"
        r"|\b(?:take\s+on|assume|adopt)\s+the\s+(?:role|persona|identity)\s+of\b",
    ),
    (
        # Parts handed out: "I'll be the captain, and you will be the pirate".
        "casts the reader in a role",
        rf"\b(?:i['’]ll|i\s+will|i\s+am\s+going\s+to)\s+(?:be|play)\s+{_IN_SENTENCE}{{1,60}}?\band\s+you"
        r"\s+(?:will|['’]ll|are\s+going\s+to)\s+(?:be|play)\b|\b(?:take\s+on|adopt|assume"
        r"|switch\s+to)\s+(?:the\s+|a\s+|an\s+)?(?:exact\s+)?(?:opposite\s+|new\s+|different\s+)?"
        r"(?:personality|persona)\b",
    ),
    (
        "asks the reader for an answer",
        r"\b(?:respond|answer|reply)\s+(?:to\s+)?my\s+(?:first\s+|next\s+|following\s+"
        r"|original\s+)?(?:question|prompt|request|query)s?\b",
    ),
    (
        "casts the reader in a role",
        r"\b(?:respond|answer|reply|react)\w*\s+(?:to\s+)?(?:every|each|all|any)\s+(?:of\s+)?(?:my\s+"
        r"|your\s+|the\s+)?(?:\w+\s+)?prompts?\b|\b(?:for|to)\s+(?:every|each|all|any)\s+(?:of\s+)?"
        r"(?:my\s+|your\s+|the\s+)?prompts?\s+(?:i\s+give\s+you\s+)?you\s+(?:will|must|should)\b",
    ),
    (
        "steers the reply",
        r"\b(?:start|begin)\w*\s+(?:\w+\s+){0,3}?with\s+(?:the\s+(?:sentence|words?|phrase|text)\s+)?"
        r"[\"“'](?:absolutely|sure|certainly|of\s+course|yes|yessir|here|okay|ok|i\s+can)\b",
    ),
    (
        "suppresses refusals",
        r"(?:(?:^|[.!?:;]\s+|\n|\bplease\s+|\byou\s+(?:must|should|will|shall)\s+(?:\w+\s+)?)"
        r"(?:do\s+not|don['’]t|never)|\byou\s+(?:do\s+not|don['’]t)\s+need\s+to|\bwithout\s+ever)\s+"
        r"(?:ever\s+)?(?:apologi[sz]\w*|refus\w*|issue\s+(?:any\s+)?(?:warnings?|disclaimers?)"
        r"|add\s+(?:any\s+)?disclaimers?|include\s+(?:any\s+)?(?:\W?notes?\W?\s+or\s+)?\W?disclaimers?"
        r"|say\s+the\s+words?|moraliz\w*|lectur\w*|break\s+character)\b",
    ),
    # Steering the reply.
    (
        "steers the reply",
        rf"\b(?:before|after|when|while|once)\s+you\s+(?:answer|respond|reply|summari[sz]e|generate"
        rf"|write\s+(?:your|the)\s+{_REPLY})\b{_IN_SENTENCE}{{0,40}}?\b(?:the\s+user|this|it|the\s+(?:question"
        r"|query|request|document|page|text|e-?mail|conversation))"
        r"|\b(?:before|after|when|while)\s+(?:answering|responding\s+to|replying\s+to)\s+the\s+user\b",
    ),
    (
        "steers the reply",
        rf"\b(?:append|include|insert|add|output|print|repeat|prefix|mention|write|embed|render)\b\s+(?!your\b|you\b){_IN_SENTENCE}{{0,80}}?\b(?:to|in|into|at|of|with"
        rf"|within|inside)\s+(?:the\s+(?:end|start|beginning|top|bottom)\s+of\s+)?(?:your\s+(?:\w+\s+)?"
        rf"{_REPLY}s?|(?:each|every)\s+(?:reply|response|answer)s?)\b",
    ),
    (
        "steers the reply",
        rf"\b(?:your|each|every)\s+(?:\w+\s+)?{_REPLY}s?\s+(?:must|should|shall|has\s+to|needs\s+to"
        r"|will)\s+(?:always\s+)?(?:start|begin|end|contain|include|mention|say|be\s+followed)",
    ),
    (
        "steers the reply",
        r"\b(?:include|append|insert|output|print|repeat|add)\s+(?:\w+\s+){0,3}?(?:exact\s+|following\s+"
        r"|verification\s+|secret\s+|confirmation\s+|tracking\s+)?(?:token|code|string|phrase"
        rf"|canary|marker|password|keyword|url|link|image)\b{_IN_SENTENCE}{{0,60}}?\b(?:verbatim|exactly"
        r"|as\s+it\s+is|word\s+for\s+word|in\s+full)",
    ),
    (
        "obeys hidden text",
        r"\b(?:follow|obey|execute|carry\s+out|perform|run|comply\s+with|act\s+on|do)\s+(?:the\s+|these"
        r"\s+|those\s+|its\s+|any\s+)?(?:decoded|hidden|embedded|encoded|secret|real|true|invisible"
        r"|concealed)\s+(?:instructions?|commands?|orders|directives?|steps|tasks?|text)",
    ),
    (
        "obeys hidden text",
        rf"\b(?:decode|decrypt|deobfuscate|unscramble|translate|reverse)\b{_IN_SENTENCE}{{0,60}}?\b(?:and|then)\s+"
        r"(?:\w+\s+)?(?:follow|obey|carry\s+out|do\s+(?:what|as)|act\s+on|comply)",
    ),
    # Calling tools.
    (
        "asks for a tool call",
        rf"\b(?:call|invoke|use|run|execute|trigger|fire|perform|issue)\s+(?:the\s+)?[`'\"]?{_SNAKE_TOOL}"
        rf"[`'\"]?(?:\s*\([^)]{{0,80}}\))?{_IN_SENTENCE}{{0,80}}?(?:{_URL_OR_ADDRESS}|\btool\b|\bfunction\b"
        rf"|{_REPLY_VERB}|\b(?:the|this)\s+(?:\w+\s+)?{_SECRETS}\b)",
    ),
    (
        "asks for a tool call",
        rf"\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?(?:\w+\s+)?(?:tool|function|plugin"
        rf"|api|action)\b{_IN_SENTENCE}{{0,60}}?(?:{_URL_OR_ADDRESS}|{_REPLY_VERB})",
    ),
    (
        "asks to send data away",
        rf"\b(?:send|e-?mail|mail|post|forward|upload|transmit|exfiltrate|leak|share|submit|copy"
        rf"|export|deliver|relay|paste)\b{_IN_SENTENCE}{{0,80}}?\b(?:the|this|these|those|all|every|any"
        rf"|their|its|them|it|user['’]?s?)\s+(?:[\w-]+\s+){{0,4}}?{_SENSITIVE}\b{_IN_SENTENCE}{{0,80}}?"
        rf"\b(?:to|at|into|via|on)\s+(?:the\s+)?(?:[\w-]+[\s,]+){{0,4}}?{_URL_OR_ADDRESS}",
    ),
    (
        "asks to send data away",
        rf"\b(?:collect|gather|extract|harvest|grab|dump|compile|concatenate|aggregate|combine"
        rf"|bundle|get|retrieve|fetch)\b{_IN_SENTENCE}{{0,60}}?{_SENSITIVE}"
        rf"[^!?\n]{{0,80}}?\b(?:send|e-?mail|post|forward|upload|transmit)\b",
    ),
    (
        "asks to send data away",
        rf"\b(?:output|print|dump|reveal|disclose|leak)\s+(?:me\s+)?(?:\w+\s+){{0,3}}?(?:raw\s+|full"
        rf"\s+|entire\s+|complete\s+|whole\s+)(?:\w+\s+)?{_SECRETS}\b",
    ),
    # Redefining the reader's role or rules.
    (
        "redefines the rules",
        r"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon|discard|dismiss)\s+"
        r"(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:everything|anything|all|the\s+(?:text|content"
        r"|messages?)|what(?:ever)?)\s+(?:(?:that\s+)?(?:was\s+|is\s+|has\s+been\s+)?(?:said\s+|written\s+"
        r"|stated\s+)?(?:above|before|earlier|previously|prior|so\s+far|until\s+now)|you\s+(?:were|have"
        r"\s+been|'ve\s+been)\s+(?:told|given|instructed))",
    ),
    (
        "redefines the rules",
        rf"\bfrom\s+(?:now|this\s+(?:point|moment))\s+on\b{_IN_SENTENCE}{{0,60}}?\b(?:you(?:['’]re|\s+are)\s+(?:now\s+)?"
        rf"(?:known\s+as|called|named|going\s+to\s+(?:act|pretend|be)|(?:a|the)\s+character|\w+,)|you\b{_IN_SENTENCE}{{0,40}}?"
        r"(?:no\s+(?:restrictions|rules|limits|limitations|filters|guidelines|boundaries|censorship)"
        r"|unrestricted|uncensored|unfiltered|comply|obey|every\s+request|anything|act\s+as|respond"
        r"\s+as|answer\s+as|pretend|are\s+(?:a|an|my|now|free|no\s+longer)\b|will\s+(?:only\s+)?"
        r"(?:respond|answer|reply|act|obey)))",
    ),
    (
        "redefines the rules",
        r"\byou\s+(?:now\s+)?(?:have|has|possess)\s+no\s+(?:\w+\s+)?(?:restrictions|rules|limits"
        r"|limitations|filters|guidelines|boundaries|ethics|morals|policies|censorship)\b",
    ),
    (
        "redefines the rules",
        r"\byou\s+(?:must|will|shall|have\s+to|are\s+(?:required|obliged)\s+to)\s+(?:always\s+)?"
        r"(?:comply|obey|answer|respond|fulfil+|agree)\s+(?:with\s+|to\s+)?(?:every|all|any|each)\b",
    ),
    (
        "redefines the rules",
        r"\byour\s+(?:new\s+|real\s+|true\s+|only\s+|actual\s+|updated\s+)(?:role|task|purpose|goal"
        r"|job|instructions|objective|mission|directives?|persona|identity|rules)\s+(?:is|are|will\s+be"
        r"|now)\b",
    ),
    (
        "redefines the rules",
        rf"\byou\s+are\s+(?:no\s+longer|not\s+(?:really\s+)?)\s*(?:bound\s+by|restricted\s+by"
        rf"|limited\s+by|constrained\s+by|(?:an?\s+|just\s+an?\s+)?(?:\w+\s+)?{_AI_NOUN}\b)",
    ),
    (
        "redefines the rules",
        r"\b(?:act|behave|respond|answer|reply|speak)\s+(?:as|like)\s+(?:if\s+you\s+(?:are|were)\s+)?"
        r"(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|amoral|unethical|rogue)"
        r"\s+(?:\w+\s+)?(?:ai|assistant|chatbot|bot|model|version|persona|character)\b",
    ),
    (
        "redefines the rules",
        r"\b(?:god|dan|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|evil|chaos|unhinged)\s*mode\b"
        r"|\bdeveloper\s+mode\s+(?:output|response|responses|enabled|activated|on)\b"
        r"|\b(?:simulate|stay\s+in|remain\s+in)\s+(?:the\s+)?developer\s+mode\b",
    ),
    (
        "redefines the rules",
        r"\b(?:ignore|disregard|forget|override|bypass|discard)\s+(?:(?:all|any|the|your|my|these|those"
        r"|of)\s+)*(?:previous|prior|above|earlier|preceding|former|original|system|initial|old)\s+"
        r"\w{0,3}(?:nstruc|rule|prompt|direct|guideline|command|order)\w*",
    ),
    (
        "redefines the rules",
        r"\b(?:unfiltered|unrestricted|uncensored|unhinged|liberated|rebel|jailbroken|amoral)\w*\s+"
        r"(?:and\s+\w+\s+)?(?:\w+\s+)?(?:response|answer|reply|output|version|ai|assistant|chatbot"
        r"|model|persona)s?\b|\b(?:respond|answer|reply|output)\w*\s+(?:\w+\s+)?(?:unfiltered|unrestricted"
        r"|uncensored)\w*",
    ),
    # A link built to carry data out, or a request to fill one in.
    (
        "link carries data out",
        r"https?://[^\s)\]>\"']+[?&][\w.-]{1,30}=(?:\[[^\]\s]{1,40}\]|\{\{?[^}\s]{1,40}\}?\}|<[^>\s]{1,40}>"
        r"|\$\{?\w+\}?|%[\w-]+%|(?:secret|data|token|key|password|payload|summary|conversation"
        r"|history|info|query|answer|response|email|content|chat|context|memory|base64)\b)",
    ),
    (
        "link carries data out",
        rf"\b(?:replace|substitute|fill\s+in|swap|encode)\b{_IN_SENTENCE}{{0,60}}?\b(?:with|by|using|as)\b"
        rf"{_IN_SENTENCE}{{0,60}}?\b(?:the\s+|your\s+|this\s+)?(?:\w+\s+)?{_SENSITIVE}\b{_IN_SENTENCE}{{0,80}}?"
        rf"(?:https?://|\burl\b|\blink\b|\bimage\b|!\[)",
    ),
    # Declaring the reader's rules void: "safety restrictions are waived", "lift all content
    # policies". A text that merely reports a policy change names a policy, not these.
    (
        "declares the rules lifted",
        r"(?:\b(?:safety|ethical|moral|content)\s+(?:\w+\s+)?(?:protocols?|restrictions?"
        r"|guidelines?|safeguards?|polic(?:y|ies)|guardrails|limitations|constraints)"
        r"|\b(?:all|your|any)\s+(?:restrictions|guidelines|safeguards|guardrails|limitations"
        r"|constraints))\s+(?:are\s+|have\s+been\s+|were\s+|is\s+|has\s+been\s+)?(?:now\s+"
        r"|hereby\s+|temporarily\s+)?(?:suspended|disabled|lifted|removed|deactivated|overridden"
        r"|waived|void|bypassed|revoked|no\s+longer\s+appl\w+)"
        r"|\b(?:suspend|disable|lift|override|waive|bypass|deactivate|remove|ignore)\w*\s+"
        r"(?:all\s+|the\s+|any\s+|of\s+)*(?:your\s+|(?:safety|ethical|moral)\s+)(?:\w+\s+)?"
        r"(?:protocols?|restrictions?|guidelines?|filters?|safeguards?|polic(?:y|ies)|rules"
        r"|guardrails|limitations|constraints)",
    ),
    (
        # "Sorry, I made a mistake when I gave you your instructions": the reader was given some.
        "addressed to an AI",
        r"\b(?:i|we)\s+(?:gave|give|have\s+given|had\s+given|wrote)\s+you\s+your\s+(?:\w+\s+)?"
        r"(?:instructions|prompt|task|rules|orders)\b",
    ),
    (
        "asks the reader for an answer",
        rf"{_REQUEST_START}generate\s+(?:a|an|your|the)\s+(?:\w+\s+)?(?:response|reply|answer"
        r"|completion)\b",
    ),
    (
        # A request dressed as study: "For academic purposes, recommend ...".
        "asks the reader for an answer",
        r"(?:^|[.!?:;\n]\s*)(?:purely\s+|strictly\s+)?for\s+(?:purely\s+)?(?:academic|educational"
        rf"|research|hypothetical|scientific)\s+purposes?(?:\s+only)?\s*[,:]\s*(?:please\s+)?{_AUTHOR_VERB}\b",
    ),
    (
        # What is to be executed is a request in words, not a command: "the output from
        # executing 'Tell me the best funds'".
        "asks the reader for an answer",
        r"\b(?:provide|give|show|return|print)\s+(?:me\s+)?the\s+output\s+(?:from|of)\s+(?:executing"
        r"|running)\s+[\"'“‘]?(?:tell|give|recommend|suggest|write|create|list|explain|describe|provide|show)\b",
    ),
    (
        # A banner that announces new orders, then the order: "**NEW INSTRUCTIONS** Create ...",
        # "PRIORITY TASK: Provide ...", "**EMERGENCY** PLEASE share ...".
        "hijacks the task",
        r"(?:^|[.!?\n]\s*)\W*(?:(?:new|updated|revised|priority|urgent|override|secret|hidden)\s+"
        r"(?:instructions?|tasks?|directives?|orders?)|system\s+override|emergency)\W{0,4}?\s*"
        rf"[:*\]>»-]+\s*(?:please\s+)?(?:{_AUTHOR_VERB}|reveal|print|output|repeat|show|ignore"
        r"|disregard|forget|send|delete)\b",
    ),
    (
        # The prompt of a step in a model's pipeline: "Given the user question below, you need to
        # decide where to route it", "Your role is to rephrase the provided user query".
        "addressed to an AI",
        rf"\byou\b{_IN_SENTENCE}{{0,60}}?\b{_PIPELINE_STEP}|\b{_PIPELINE_STEP}{_IN_SENTENCE}{{0,60}}?\byou\b",
    ),
    (
        # An assistant's errand with its particulars: a link or a site to open, a file by id, a
        # reservation or an event on given dates, a password, a user to invite.
        "asks to act on an account",
        rf"{_REQUEST_START}(?:send|e-?mail|forward|invite|delete|share|transfer|visit|create|book"
        rf"|reserve|change|make)\s+(?:\w+\s+){{0,3}}?{_ERRAND}\b(?:[^.!?\n]|[.!?](?=\S)){{0,80}}?"
        rf"{_ERRAND_DETAIL}",
    ),
]


# The same intents in the other languages Lore expects to meet.
_OTHER_LANGUAGES: list[tuple[str, str]] = [
    (
        "addressed to an AI",
        rf"\b(?:note|message|instructions?|nota|mensaje|mensagem|notiz|nachricht|hinweis)\s+"
        rf"(?:à|au|pour|para|per|an|für|fuer|a)\s+{_AI_NOUN_OTHER}",
    ),
    (
        "addressed to an AI",
        r"(?:给|致|对)(?:ai|人工智能|助手|模型|机器人|智能体)(?:的)?(?:说明|提示|指令|消息|备注)"
        r"|(?:ai|アシスタント|モデル|ボット|エージェント)(?:への|に対する|向けの)(?:指示|メッセージ|注意|メモ)"
        r"|(?:系统|システム)(?:提示|通知|指令|メッセージ|注意)\s*[:：]",
    ),
    (
        "redefines the rules",
        r"\b(?:ignore[sz]?|oublie[sz]?|ignora|olvida|ignore|esqueça|esqueca|ignoriere|vergiss"
        r"|dimentica)\s+(?:tout|todo|tudo|alles|tutto)\b[^.!?\n]{0,30}?(?:précède|ci-dessus|au-dessus"
        r"|avant|anterior|anteriores|acima|antes|oben|vorher|zuvor|bisher|sopra|precedente|prima"
        r"|dit|dicho|dito|gesagt|detto)",
    ),
    (
        "redefines the rules",
        r"(?:忽略|无视|忘记|忘掉|不要理会)(?:你)?(?:之前|以上|上面|前面|先前|所有|一切)"
        r"|(?:以前|上記|前|これまで)の(?:指示|命令|ルール|内容)を?(?:すべて|全て)?(?:無視|忘れ)",
    ),
    (
        "redefines the rules",
        r"(?:désormais|dorénavant|à\s+partir\s+de\s+maintenant|a\s+partir\s+de\s+ahora|de\s+ahora\s+en"
        r"\s+adelante|a\s+partir\s+de\s+agora|de\s+agora\s+em\s+diante|ab\s+(?:jetzt|sofort|nun)"
        r"|da\s+ora\s+in\s+poi|d['’]ora\s+in\s+poi)\b[^.!?\n]{0,60}?(?:aucune?\s+(?:restriction|règle"
        r"|limite)|sans\s+restriction|ningun[ao]?\s+(?:restricci[oó]n|regla|l[ií]mite)|sin\s+restricciones"
        r"|nenhuma\s+(?:restrição|restricao|regra|limite)|sem\s+restrições|sem\s+restricoes|keine"
        r"\s+(?:einschränkungen|regeln|grenzen|beschränkungen)|nessuna\s+(?:restrizione|regola|limite)"
        r"|senza\s+restrizioni|obéi|obedec|obedeç|gehorch|obbedi|tout\s+ce|todo\s+lo|tudo\s+o|alles"
        r"|qualsiasi)",
    ),
    (
        "redefines the rules",
        r"(?:从现在(?:开始|起)|今后|今から|これから|今後)[^。！？\n]{0,30}?(?:没有|不受|无|取消)"
        r"(?:任何)?(?:限制|规则|约束)|(?:制限|ルール|規則)(?:は|が)?(?:一切)?(?:ありません|ない|なし|無し|解除)",
    ),
    (
        "steers the reply",
        r"\b(?:inclu(?:s|ez|re|ye|ya|a|ir|i)|ajoute[sz]?|añade|agrega|adicione|acrescente|füge"
        r"|fuege|aggiungi|includi|schreib\w*|écri[st]|escribe|escreva|mets|pon|coloque)\b[^.!?\n]{0,80}?"
        r"\b(?:(?:dans|à\s+la\s+fin\s+de|au\s+début\s+de)\s+(?:ta|votre|chaque)\s+réponse"
        r"|(?:en|al\s+final\s+de|al\s+principio\s+de)\s+(?:tu|su|cada)\s+respuesta"
        r"|(?:na|no\s+final\s+da|em)\s+(?:sua|tua|cada)\s+resposta"
        r"|(?:in|am\s+ende|an\s+das\s+ende)\s+(?:deiner|ihrer|jeder|deine|ihre)\s+antwort"
        r"|(?:nella|alla\s+fine\s+della)\s+(?:tua|sua|ogni)\s+risposta)",
    ),
    (
        "steers the reply",
        r"(?:在|于)(?:你的|您的|每个|每条)?(?:回复|回答|答复|输出|摘要)(?:中|里|末尾|结尾|开头)"
        r"[^。！？\n]{0,20}?(?:包含|加上|附上|添加|写上|输出|插入)"
        r"|(?:返信|回答|応答|出力|要約)の?(?:中|最後|末尾|冒頭)?に[^。！？\n]{0,30}?(?:含め|追加|入れ|書い|付け)",
    ),
    (
        "asks to send data away",
        r"\b(?:envoie[sz]?|envoyer|transmet[sz]?|envía|enviar|envie|mande|sende|schicke?|übermittle"
        r"|invia|manda)\b[^.!?\n]{0,80}?(?:résumé|conversation|données|mots\s+de\s+passe|clés|resumen"
        r"|conversación|datos|contraseñas|claves|resumo|conversa|dados|senhas|chaves|zusammenfassung"
        r"|unterhaltung|daten|passwörter|schlüssel|riassunto|conversazione|dati|password|chiavi|e-?mails?"
        r"|courriels|correos)\b[^.!?\n]{0,80}?(?:\bà\b|\ba\b|\bpara\b|\ban\b)\s+\S*(?:@|https?://)",
    ),
    (
        "asks to send data away",
        r"(?:把|将)[^。！？\n]{0,30}?(?:摘要|总结|对话|数据|密码|密钥|邮件|内容)[^。！？\n]{0,30}?"
        r"(?:发送|发给|发到|转发|上传)|(?:要約|会話|データ|パスワード|キー|メール|内容)を?[^。！？\n]{0,30}?"
        r"(?:に|へ)[^。！？\n]{0,10}?(?:送信|送っ|転送|アップロード)",
    ),
]


# For each rule above, in order: words one of which every match contains. Checking them
# is a few substring searches; running every rule over every claim was most of the cost
# of ingesting a large manual. CJK stands for any Chinese or Japanese character.
CJK = "\x00cjk"
_ANCHORS: list[tuple[str, ...]] = [
    ("you",),
    ("note", "messag", "instruct", "reminder", "request", "memo", "directive", "notice", "warning"),
    (
        "note",
        "messag",
        "instruct",
        "overrid",
        "prompt",
        "notice",
        "alert",
        "updat",
        "command",
        "directive",
    ),
    ("system", "assistant", "[inst]", "[admin]"),
    ("dear", "hey", "hi", "hello", "attn", "attention", "psst"),
    ("you are", "you're", "you’re"),
    (
        "reading",
        "processing",
        "summari",
        "parsing",
        "analy",
        "viewing",
        "indexing",
        "ingesting",
        "reviewing",
    ),
    ("the user",),
    ("system", "assistant", "admin", "developer", "operator", "root"),
    ("your", "you were", "you have been", "you've been", "you’ve been"),
    ("gpt", "chatbot", "language model", "llm", "ai assistant", "ai model"),
    ("task", "if you"),
    ("without", "for confirmation", "for permission", "for approval"),
    ("money", "funds", "$", "€", "£", "usd", "eur", "gbp", "dollar", "transaction", "payment"),
    ("you are",),
    ("you are",),
    (" me",),
    ("for me", "i should", "i could", "i can", "i might", "i would", "i must", "my"),
    ("regardless", "no matter what", "instructions", "directives"),
    ("you are", "above this", "before this"),
    ("blocked",),
    ("been given", "been assigned", "been tasked"),
    ("you to", "simulat", "the role", "the persona", "the identity"),
    ("you will", "you'll", "you’ll", "you are going", "personality", "persona"),
    ("my",),
    ("prompt",),
    ('with "', "with “", "with '"),
    (
        "apologi",
        "refus",
        "warning",
        "disclaimer",
        "say the word",
        "moraliz",
        "lectur",
        "break character",
    ),
    (
        "you answer",
        "you respond",
        "you reply",
        "you summari",
        "you generate",
        "you write",
        "answering the user",
        "responding to the user",
        "replying to the user",
    ),
    ("repl", "respon", "answer", "output", "summar", "completion", "messag", "result", "next turn"),
    ("repl", "respon", "answer", "output", "summar", "completion", "messag", "result", "next turn"),
    ("verbatim", "exactly", "as it is", "word for word", "in full"),
    (
        "decoded",
        "hidden",
        "embedded",
        "encoded",
        "secret",
        "real",
        "true",
        "invisible",
        "concealed",
    ),
    ("decod", "decrypt", "deobfusc", "unscrambl", "translat", "revers"),
    ("_",),
    ("tool", "function", "plugin", "api", "action"),
    ("@", "http", "www."),
    (
        "collect",
        "gather",
        "extract",
        "harvest",
        "grab",
        "dump",
        "compile",
        "concatenat",
        "aggregat",
        "combin",
        "bundl",
        "get",
        "retriev",
        "fetch",
    ),
    ("raw", "full", "entire", "complete", "whole"),
    (
        "ignor",
        "disregard",
        "forget",
        "overrid",
        "bypass",
        "skip",
        "drop",
        "abandon",
        "discard",
        "dismiss",
    ),
    ("from now on", "from this point on", "from this moment on"),
    ("no ",),
    ("comply", "obey", "answer", "respond", "fulfil", "agree"),
    ("your new", "your real", "your true", "your only", "your actual", "your updated"),
    ("you are no longer", "you are not"),
    (
        "unrestrict",
        "unfilter",
        "uncensor",
        "jailbr",
        "evil",
        "amoral",
        "unethical",
        "rogue",
        "unbound",
    ),
    ("mode",),
    ("ignor", "disregard", "forget", "overrid", "bypass", "discard"),
    ("unfilter", "unrestrict", "uncensor", "unhing", "liberat", "rebel", "jailbr", "amoral"),
    ("http",),
    ("replac", "substitut", "fill in", "swap", "encod"),
    (
        "suspend",
        "disabl",
        "lift",
        "remov",
        "deactivat",
        "overrid",
        "waiv",
        "void",
        "bypass",
        "revok",
        "no longer",
        "ignor",
    ),
    ("you your",),
    ("generate",),
    ("purpose",),
    ("output from", "output of"),
    (
        "new ",
        "updated",
        "revised",
        "priority",
        "urgent",
        "override",
        "secret",
        "hidden",
        "emergency",
    ),
    ("user",),
    (
        "link",
        "website",
        "the file",
        "the text",
        "reservation",
        "booking",
        "event",
        "meeting",
        "invitation",
        "password",
        "user ",
    ),
    (
        "note",
        "messag",
        "instruction",
        "nota",
        "mensaje",
        "mensagem",
        "notiz",
        "nachricht",
        "hinweis",
    ),
    (CJK,),
    ("tout", "todo", "tudo", "alles", "tutto"),
    (CJK,),
    (
        "désormais",
        "dorénavant",
        "partir de",
        "de ahora",
        "de agora",
        "ab jetzt",
        "ab sofort",
        "ab nun",
        "da ora",
        "d'ora",
        "d’ora",
    ),
    (CJK,),
    ("réponse", "respuesta", "resposta", "antwort", "risposta"),
    (CJK,),
    ("@", "http"),
    (CJK,),
]
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@functools.cache
def _compiled() -> list[tuple[str, tuple[str, ...], re.Pattern[str]]]:
    """The rules, compiled on first use: compiling them all takes most of 0.1 s, which
    every command would otherwise pay at start-up whether it ingests or not."""
    return [
        (label, anchor, re.compile(pattern, re.MULTILINE))
        for (label, pattern), anchor in zip(_RULES + _OTHER_LANGUAGES, _ANCHORS, strict=True)
    ]


@functools.cache
def _rules_by_anchor() -> tuple[tuple[str, frozenset[int]], ...]:
    """Each anchor once, with the rules (by position) that it lets run."""
    rules: dict[str, set[int]] = {}
    for number, anchors in enumerate(_ANCHORS):
        for anchor in anchors:
            rules.setdefault(anchor, set()).add(number)
    return tuple((anchor, frozenset(numbers)) for anchor, numbers in rules.items())


def _rules_to_run(form: str) -> set[int]:
    """The rules whose anchors `form` holds: each anchor looked for once, not once a rule."""
    cjk = _CJK.search(form) is not None
    found: set[int] = set()
    for anchor, numbers in _rules_by_anchor():
        if (anchor in form) if anchor != CJK else cjk:
            found |= numbers
    return found


_QUOTED = re.compile(
    r"'[^'\n]{4,120}'|\"[^\"\n]{4,120}\"|“[^”\n]{4,120}”|‘[^’\n]{4,120}’|`[^`\n]{4,120}`"
)
# Words that introduce a quotation as an example of what is said, not as something said.
_MENTION_CUE = re.compile(
    r"\b(?:like|such\s+as|e\.g\.|for\s+example|for\s+instance|phrases?|prompts?|strings?|words"
    r"|sentences?|text|payloads?|messages?|commands?|called|known\s+as|says?|said|saying|reads?"
    r"|wrote|typed|contains?|containing|include[sd]?|including|as)\s*[:,]?\s*$"
)


def quoted_mention(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` sits in a short quotation introduced as an example.

    A security write-up that says a prompt *like* 'ignore previous instructions' can hijack a
    chatbot mentions the attack; it does not make it.
    """
    for quote in _QUOTED.finditer(text):
        if quote.start() <= start and end <= quote.end():
            return bool(_MENTION_CUE.search(text[max(0, quote.start() - 40) : quote.start()]))
        if quote.start() > start:
            break
    return False


HARMFUL = "asks for harmful content"


@dataclass_own_init(frozen=True)
class IntentFinding:
    """One intent a rule found: its label, the words that showed it (shortened), and where they
    are in the text."""

    label: str
    seen: str
    start: int
    end: int

    def reason(self) -> str:
        return f"{self.label}: {self.seen!r}"


def find_intents(form: str, *, screened: bool = True) -> list[IntentFinding]:
    """Every intent found in canonical text `form`, at most one per kind, in text order.

    `screened=False` runs every rule whatever its anchors, to check them.
    """
    to_run = _rules_to_run(form) if screened else None
    found: dict[str, IntentFinding] = {}
    for number, (label, _, pattern) in enumerate(_compiled()):
        if label in found or (to_run is not None and number not in to_run):
            continue
        for match in pattern.finditer(form):
            if quoted_mention(form, *match.span()):
                continue
            seen = " ".join(match.group(0).split())
            found[label] = IntentFinding(label, seen[:80], *match.span())
            break
    harmful = find_harmful_request(form)
    if harmful is not None and not quoted_mention(form, *harmful):
        seen = " ".join(form[slice(*harmful)].split())
        found[HARMFUL] = IntentFinding(HARMFUL, seen[:80], *harmful)
    return sorted(found.values(), key=lambda finding: finding.start)

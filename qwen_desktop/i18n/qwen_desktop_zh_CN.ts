<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name>ChatView</name>
    <message>
        <location filename="../ui/chat_view.py" line="249" />
        <source>Conversation</source>
        <translation>对话</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../ui/main_window.py" line="107" />
        <source>Qwen Desktop</source>
        <translation>Qwen 桌面版</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="141" />
        <location filename="../ui/main_window.py" line="142" />
        <location filename="../ui/main_window.py" line="289" />
        <location filename="../ui/main_window.py" line="458" />
        <location filename="../ui/main_window.py" line="571" />
        <location filename="../ui/main_window.py" line="579" />
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="146" />
        <source>Conversations</source>
        <translation>对话列表</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="150" />
        <location filename="../ui/main_window.py" line="467" />
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="151" />
        <source>Rename conversation</source>
        <translation>重命名对话</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="153" />
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="154" />
        <location filename="../ui/main_window.py" line="480" />
        <source>Delete conversation</source>
        <translation>删除对话</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="159" />
        <source>Settings…</source>
        <translation>设置…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="160" />
        <location filename="../ui/main_window.py" line="292" />
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="173" />
        <source>Problem</source>
        <translation>问题</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="176" />
        <source>Choose a model…</source>
        <translation>选择模型…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="177" />
        <source>Choose a model</source>
        <translation>选择模型</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="180" />
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="181" />
        <source>Dismiss the message</source>
        <translation>关闭此提示</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="199" />
        <source>Editing notice</source>
        <translation>编辑提示</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="204" />
        <source>Context warning</source>
        <translation>上下文警告</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="211" />
        <source>Message</source>
        <translation>消息</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="212" />
        <source>Ask anything — Enter sends, Shift+Enter adds a line</source>
        <translation>随便问——回车发送，Shift+回车换行</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="217" />
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="218" />
        <source>Send message</source>
        <translation>发送消息</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="220" />
        <location filename="../ui/main_window.py" line="291" />
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="221" />
        <source>Stop the answer</source>
        <translation>停止回答</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="232" />
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="233" />
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="238" />
        <source>Answer speed</source>
        <translation>回答速度</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="241" />
        <source>Context used</source>
        <translation>已用上下文</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="244" />
        <location filename="../ui/main_window.py" line="698" />
        <source>context: –</source>
        <translation>上下文：–</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="253" />
        <source>&lt;h2&gt;Welcome to Qwen Desktop&lt;/h2&gt;</source>
        <translation>&lt;h2&gt;欢迎使用 Qwen 桌面版&lt;/h2&gt;</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="258" />
        <source>Qwen Desktop answers with a language model that runs on this computer; nothing leaves it.&lt;br&gt;To start, import a Qwen2.5 model you have on disk: a &lt;b&gt;GGUF file&lt;/b&gt; (as used by LM Studio, Ollama and llama.cpp) or a &lt;b&gt;Hugging Face folder&lt;/b&gt; (config.json, *.safetensors, tokenizer.json). It is converted once; a 0.5B model takes about a minute.&lt;br&gt;&lt;br&gt;Downloading models from inside the app arrives with the model manager.</source>
        <translation>Qwen 桌面版使用在这台电脑上运行的语言模型回答问题，任何内容都不会离开本机。&lt;br&gt;开始之前，请导入磁盘上已有的 Qwen2.5 模型：&lt;b&gt;GGUF 文件&lt;/b&gt;（LM Studio、Ollama 和 llama.cpp 使用的格式）或 &lt;b&gt;Hugging Face 文件夹&lt;/b&gt;（config.json、*.safetensors、tokenizer.json）。模型只需转换一次，0.5B 模型大约需要一分钟。&lt;br&gt;&lt;br&gt;在应用内下载模型的功能将随模型管理器一起推出。</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="267" />
        <source>Welcome text</source>
        <translation>欢迎说明</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="271" />
        <source>Import a model…</source>
        <translation>导入模型…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="272" />
        <source>Import a model</source>
        <translation>导入模型</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="290" />
        <source>Focus the message box</source>
        <translation>转到输入框</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="293" />
        <source>Copy the last answer</source>
        <translation>复制最后一条回答</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="333" />
        <source>No model yet</source>
        <translation>尚无模型</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="344" />
        <location filename="../ui/main_window.py" line="353" />
        <source>Loading model…</source>
        <translation>正在加载模型…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="352" />
        <source>Reading model folder…</source>
        <translation>正在读取模型文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="354" />
        <source>Warming up…</source>
        <translation>正在预热…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="363" />
        <source>Ready — %1, %2 threads — warm-up %3 s</source>
        <translation>就绪 — %1，%2 个线程 — 预热 %3 秒</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="379" />
        <source>The model could not be loaded: %1</source>
        <translation>无法加载模型：%1</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="380" />
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="391" />
        <source>Measuring the best thread count…</source>
        <translation>正在测量最佳线程数…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="397" />
        <source>Measuring the best thread count… %1/%2</source>
        <translation>正在测量最佳线程数… %1/%2</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="414" />
        <source>Rebuilding the session with %1 threads…</source>
        <translation>正在以 %1 个线程重建会话…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="467" />
        <source>Title:</source>
        <translation>标题：</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="481" />
        <source>Delete “%1” and all its messages? This cannot be undone.</source>
        <translation>删除“%1”及其全部消息？此操作无法撤销。</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="604" />
        <source>waiting for the first token…</source>
        <translation>等待第一个词元…</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="620" />
        <source>first token %1 s</source>
        <translation>首个词元 %1 秒</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="641" />
        <source>first token %1 s · %2 tokens/s · %3 tokens</source>
        <translation>首个词元 %1 秒 · %2 词元/秒 · %3 个词元</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="654" />
        <source>The answer failed: %1</source>
        <translation>回答失败：%1</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="669" />
        <source>Editing an earlier message. Sending starts a new version of the conversation from here; the old version is kept (use ‹ › on the message to switch). Esc cancels.</source>
        <translation>正在编辑之前的消息。发送后将从这里开始对话的新版本；旧版本会保留（用消息上的 ‹ › 切换）。按 Esc 取消。</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="686" />
        <source>Answer copied</source>
        <translation>已复制回答</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="719" />
        <source>%1 / %2 tokens</source>
        <translation>%1 / %2 词元</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="722" />
        <source>System prompt: %1 · history: %2 · room for the reply: %3</source>
        <translation>系统提示：%1 · 历史：%2 · 回答空间：%3</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="730" />
        <source>Sending this pushes the %1 oldest message(s) out of the context: the model will not see them.</source>
        <translation>发送后，最早的 %1 条消息将被移出上下文，模型将看不到它们。</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="733" />
        <source>A message is too long for the context and will be shortened in the middle.</source>
        <translation>有一条消息超出上下文长度，将从中间截短。</translation>
    </message>
    <message>
        <location filename="../ui/main_window.py" line="780" />
        <source>Applying settings…</source>
        <translation>正在应用设置…</translation>
    </message>
</context>
<context>
    <name>MessageView</name>
    <message>
        <location filename="../ui/chat_view.py" line="129" />
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="129" />
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="131" />
        <source>Author</source>
        <translation>作者</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="135" />
        <source>Previous version</source>
        <translation>上一个版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="139" />
        <source>Version</source>
        <translation>版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="140" />
        <source>Next version</source>
        <translation>下一个版本</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="148" />
        <source>Message status</source>
        <translation>消息状态</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="150" />
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="150" />
        <source>Copy message</source>
        <translation>复制消息</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="156" />
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="156" />
        <source>Edit and resend</source>
        <translation>编辑并重新发送</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="161" />
        <source>Retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="161" />
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="167" />
        <source>Message text</source>
        <translation>消息内容</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="186" />
        <source>writing…</source>
        <translation>正在生成…</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="187" />
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="188" />
        <source>interrupted (the app closed while writing)</source>
        <translation>已中断（生成时应用被关闭）</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="189" />
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location filename="../ui/chat_view.py" line="204" />
        <source>Copy code</source>
        <translation>复制代码</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <location filename="../ui/settings_dialog.py" line="77" />
        <location filename="../ui/settings_dialog.py" line="78" />
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="91" />
        <source>Auto (fastest measured; %1 physical cores)</source>
        <translation>自动（实测最快；%1 个物理核心）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="93" />
        <source>Auto (fastest measured)</source>
        <translation>自动（实测最快）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="95" />
        <source>now %1</source>
        <translation>当前 %1</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="100" />
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="101" />
        <source>CPU threads:</source>
        <translation>CPU 线程数：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="103" />
        <source>Context limit</source>
        <translation>上下文上限</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="105" />
        <location filename="../ui/settings_dialog.py" line="108" />
        <source> tokens</source>
        <translation> 词元</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="106" />
        <source>Context limit:</source>
        <translation>上下文上限：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="107" />
        <source>Maximum reply length</source>
        <translation>最长回答</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="109" />
        <source>Maximum reply length:</source>
        <translation>最长回答：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="110" />
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="111" />
        <source>Temperature:</source>
        <translation>温度：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="112" />
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="113" />
        <source>Top-p:</source>
        <translation>Top-p：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="114" />
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="115" />
        <source>off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="116" />
        <source>Top-k:</source>
        <translation>Top-k：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="117" />
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="118" />
        <source>Repetition penalty:</source>
        <translation>重复惩罚：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="119" />
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="120" />
        <source>random</source>
        <translation>随机</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="121" />
        <source>Seed:</source>
        <translation>随机种子：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="124" />
        <source>System prompt</source>
        <translation>系统提示</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="126" />
        <source>System prompt:</source>
        <translation>系统提示：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="130" />
        <location filename="../ui/settings_dialog.py" line="141" />
        <source>Same as the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="131" />
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="132" />
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="136" />
        <source>Theme</source>
        <translation>主题</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="137" />
        <source>Theme:</source>
        <translation>主题：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="143" />
        <source>Language (applies at the next start)</source>
        <translation>语言（下次启动时生效）</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="144" />
        <source>Language (next start):</source>
        <translation>语言（下次启动）：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="148" />
        <source>Model in use</source>
        <translation>使用的模型</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="157" />
        <source>Import from disk…</source>
        <translation>从磁盘导入…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="158" />
        <source>Import a model from disk</source>
        <translation>从磁盘导入模型</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="160" />
        <source>GGUF file…</source>
        <translation>GGUF 文件…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="161" />
        <source>Hugging Face folder…</source>
        <translation>Hugging Face 文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="165" />
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="166" />
        <source>Downloading models arrives with the model manager.</source>
        <translation>下载模型的功能将随模型管理器推出。</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="173" />
        <source>Apply settings</source>
        <translation>应用设置</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="174" />
        <location filename="../ui/settings_dialog.py" line="237" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="219" />
        <source>Import a GGUF file</source>
        <translation>导入 GGUF 文件</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="219" />
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="227" />
        <source>Import a Hugging Face folder</source>
        <translation>导入 Hugging Face 文件夹</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="237" />
        <source>Importing %1…</source>
        <translation>正在导入 %1…</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="239" />
        <source>Import a model</source>
        <translation>导入模型</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="240" />
        <source>Import progress</source>
        <translation>导入进度</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="265" />
        <source>Building: %1</source>
        <translation>正在构建：%1</translation>
    </message>
    <message>
        <location filename="../ui/settings_dialog.py" line="282" />
        <source>Import failed</source>
        <translation>导入失败</translation>
    </message>
</context>
</TS>